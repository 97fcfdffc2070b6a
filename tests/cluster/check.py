"""The checks of cluster.sh after `kill -9` of a replica under load.

usage: check.py ACKS AUDIT_JSONL BUDGET KILLED_AT_MS

- every acknowledged answer has its records: an `executed` one its call record and an
  executed outcome, a denied one its call record and a decision denying it with that code (nothing acknowledged is lost);
- no minute admitted more writes of `notes__add_note` by `writer` than BUDGET (the budget is
  exact across replicas), and the budget was reached (the load asked for more); `bulk`, the
  other writer, has no budget, so its writes go on executing through the kill;
- answers were acknowledged after the kill (the other replicas kept serving).
"""

import collections
import datetime
import json
import sys

acks_path, audit_path, budget, killed_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
acks = [line.split() for line in open(acks_path) if line.strip()]
records = [json.loads(line) for line in open(audit_path) if line.strip()]


def millis(at):
    if isinstance(at, (int, float)):
        return int(at)
    return int(datetime.datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1000)


calls = {}
decisions = collections.defaultdict(list)
outcomes = collections.defaultdict(list)
allowed = collections.Counter()
for r in records:
    if r.get("tool") != "notes__add_note":
        continue
    if r.get("kind") == "call":
        args = (r.get("payload") or {}).get("args") or {}
        text = args.get("text") if isinstance(args, dict) else None
        if text is not None:
            calls.setdefault(text, []).append(r.get("call_id"))
    elif r.get("kind") == "decision":
        decisions[r.get("call_id")].append((r.get("decision"), r.get("code")))
        if r.get("decision") == "allow" and r.get("principal") == "user:writer":
            allowed[millis(r["at"]) // 60000] += 1
    elif r.get("kind") == "outcome":
        outcomes[r.get("call_id")].append(r.get("decision"))

problems = []
statuses = collections.Counter()
after_kill = 0
executed_after_kill = 0
for at, text, status, code in acks:
    statuses[status if code == "-" else f"{status} {code}"] += 1
    if int(at) > killed_at:
        after_kill += 1
        executed_after_kill += status == "executed"
    found = calls.get(text, [])
    if not found:
        problems.append(f"acknowledged {text!r} ({status}) has no call record")
    elif status == "executed":
        if not any("executed" in outcomes.get(c, []) for c in found):
            problems.append(f"acknowledged {text!r} has no executed outcome record")
    elif status == "denied":
        if not any(("deny", code) in decisions.get(c, []) for c in found):
            problems.append(f"acknowledged denial {text!r} ({code}) has no call record denied with it")
for minute, n in allowed.items():
    if n > budget:
        problems.append(f"minute {minute}: {n} writes admitted, over the budget of {budget}")
if statuses.get("denied WRITE_BUDGET", 0) == 0:
    problems.append("the load never reached the write budget")
if after_kill == 0:
    problems.append("no answer was acknowledged after the kill")
if executed_after_kill == 0:
    problems.append("no write was acknowledged executed after the kill")
print(json.dumps({"phase": "kill -9", "acknowledged": len(acks), "answers": dict(statuses),
                  "acknowledged after the kill": after_kill,
                  "executed after the kill": executed_after_kill,
                  "writes admitted per minute": dict(allowed), "budget": budget,
                  "audit records": len(records), "lost": sum(1 for p in problems if "no " in p and "record" in p),
                  "problems": len(problems)}))
for p in problems[:20]:
    print("PROBLEM:", p, file=sys.stderr)
sys.exit(1 if problems else 0)
