-- Four eyes (APR-8, src/approvals.rs): who may decide a parked call, as the policy in force
-- said when it was parked, and the deciders who approved it so far.
ALTER TABLE approvals ADD COLUMN self_denied_by TEXT;               -- the rule keeping its requester out
ALTER TABLE approvals ADD COLUMN deciders INTEGER NOT NULL DEFAULT 1;   -- distinct approvals it needs
ALTER TABLE approvals ADD COLUMN approvers TEXT NOT NULL DEFAULT '[]'; -- JSON list of principals
