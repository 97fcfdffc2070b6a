//! Notifications (NOTIFY-1): a serving Warden reads the audit trail for events, addresses
//! each to the Notifiers that want it, and delivers them (`send.rs`).
//!
//! Every replica runs this loop. The cursor (how far the trail has been read) and the
//! deliveries are in the store: a replica moves the cursor only from where it found it, a
//! delivery's id is the same on every replica, and a replica claims a delivery before it sends
//! it, so each event is delivered once. Nothing here runs in a call's path: a slow or dead
//! receiver costs a call nothing.

mod send;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use warden_core::approval::{ApprovalKind, ApprovalStatus};
use warden_core::config::{Kind, NotifierSpec, Resource};
use warden_core::notify::{self, Event, Notice};
use warden_core::time::{Millis, rfc3339};
use warden_mcp::Gateway;
use warden_store::{ApprovalFilter, NewDelivery, Store, StoreError};

/// How often the trail and the due deliveries are looked at.
const POLL: Duration = Duration::from_millis(250);
/// Records read at one poll, at most.
const BATCH: i64 = 500;
/// Deliveries sent at once by one replica, at most.
const IN_FLIGHT: usize = 16;
/// How long a delivery whose notifier this replica does not know waits before it is given up:
/// another replica may have found it under a notifier this one has not loaded yet.
const UNKNOWN_GRACE_MS: i64 = 60_000;

/// Runs until `cancel`.
pub(crate) async fn run(gateway: Arc<Gateway>, cancel: CancellationToken) {
    let mut notify = Notify {
        sender: send::Sender::new(gateway.clone()),
        gateway,
        slots: Arc::new(Semaphore::new(IN_FLIGHT)),
        told_expiring: HashSet::new(),
        polls: 0,
        failing: false,
    };
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => notify.poll().await,
        }
    }
}

struct Notify {
    gateway: Arc<Gateway>,
    sender: send::Sender,
    slots: Arc<Semaphore>,
    /// Approvals whose `approval.expiring` this replica has found (the store dedupes across
    /// replicas; this spares it the write at every poll).
    told_expiring: HashSet<String>,
    polls: u64,
    /// Whether the last poll failed (its error is logged once).
    failing: bool,
}

impl Notify {
    async fn poll(&mut self) {
        self.polls += 1;
        let snapshot = self.gateway.snapshot();
        let notifiers: Vec<NotifierSpec> = snapshot
            .policy
            .config
            .of_kind(Kind::Notifier)
            .filter_map(|r| match r {
                Resource::Notifier(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        let result = async {
            self.find(&notifiers).await?;
            if self.polls.is_multiple_of(4)
                && notifiers.iter().any(|n| n.wants(Event::ApprovalExpiring))
            {
                self.expiring(&notifiers).await?;
            }
            self.deliver(&notifiers).await
        }
        .await;
        match result {
            Ok(()) => self.failing = false,
            Err(e) if !self.failing => {
                self.failing = true;
                tracing::warn!(error = %e, "notifications: the store cannot be read; trying again");
            }
            Err(_) => {}
        }
    }

    fn store(&self) -> &Store {
        self.gateway.store()
    }

    /// Reads the trail from the cursor and records a delivery of each event found to each
    /// notifier that wants it.
    async fn find(&self, notifiers: &[NotifierSpec]) -> Result<(), StoreError> {
        let store = self.store();
        let cursor = store.notify_cursor().await?;
        let head = store.audit_inserted_head().await?;
        let Some(from) = cursor.filter(|_| !notifiers.is_empty()) else {
            // Nobody to tell: the cursor follows the trail every few seconds, so that a
            // notifier applied later is told of what happens from about then on. (A new store
            // starts at its first record; one that had a trail before notifications existed,
            // at its head then: the migration sets it.)
            if cursor.is_none() || (cursor != Some(head) && self.polls.is_multiple_of(20)) {
                store
                    .enqueue_notifications(&[], Some((cursor, head)))
                    .await?;
            }
            return Ok(());
        };
        if from >= head {
            return Ok(());
        }
        let records = store.notable_records(from, head, BATCH).await?;
        let to = match records.last() {
            Some(last) if records.len() as i64 == BATCH => last.seq,
            _ => head,
        };
        let mut rows = Vec::new();
        for record in &records {
            for mut notice in notify::notices(record) {
                self.enrich(&mut notice).await?;
                rows.extend(self.address(notifiers, &notice));
            }
        }
        // With nothing found, the cursor moves once a second: fewer writes beside the calls.
        if !rows.is_empty() || self.polls.is_multiple_of(4) {
            store
                .enqueue_notifications(&rows, Some((Some(from), to)))
                .await?;
        }
        Ok(())
    }

    /// Adds what the approval's row knows to an `approval.*` notice: its project and agent.
    async fn enrich(&self, notice: &mut Notice) -> Result<(), StoreError> {
        let Some(id) = notice.approval() else {
            return Ok(());
        };
        if let Some(a) = self.store().approval(id).await? {
            if let Some(project) = a.project {
                notice.subject.insert("project".into(), project.into());
            }
            if let Some(agent) = a.agent {
                notice.subject.insert("agent".into(), agent.into());
            }
        }
        Ok(())
    }

    /// The deliveries of `notice` to the notifiers that want it.
    fn address(&self, notifiers: &[NotifierSpec], notice: &Notice) -> Vec<NewDelivery> {
        let console = self.gateway.public_url();
        notifiers
            .iter()
            .filter(|n| n.wants(notice.event))
            .map(|n| {
                let id = notify::delivery_id(n.name.as_str(), &notice.source);
                NewDelivery {
                    body: notify::body(n.format, &id, notice, console),
                    id,
                    notifier: n.name.to_string(),
                    event: notice.event.as_str().to_owned(),
                    created_at: notice.at,
                }
            })
            .collect()
    }

    /// Finds parked approvals with a quarter of their time left.
    async fn expiring(&mut self, notifiers: &[NotifierSpec]) -> Result<(), StoreError> {
        let now = self.gateway.clock().now();
        let pending = self
            .store()
            .approvals(&ApprovalFilter {
                status: vec![ApprovalStatus::Pending],
                limit: Some(1000),
                ..ApprovalFilter::default()
            })
            .await?;
        let mut rows = Vec::new();
        let mut found = Vec::new();
        for a in pending {
            if a.kind != ApprovalKind::Approval
                || self.told_expiring.contains(&a.id)
                || now < notify::expiring_from(Millis(a.created_at), Millis(a.due_at))
                || now.0 >= a.due_at
            {
                continue;
            }
            let subject = serde_json::json!({
                "tool": a.tool,
                "project": a.project,
                "principal": a.principal,
                "agent": a.agent,
                "rule": a.rule,
                "due_at": rfc3339(Millis(a.due_at)),
            });
            let mut subject = subject.as_object().cloned().unwrap_or_default();
            subject.retain(|_, v| !v.is_null());
            let notice = notify::expiring(&a.id, now, subject);
            rows.extend(self.address(notifiers, &notice));
            found.push(a.id);
        }
        if !found.is_empty() {
            self.store().enqueue_notifications(&rows, None).await?;
            self.told_expiring.extend(found);
        }
        if self.told_expiring.len() > 10_000 {
            self.told_expiring.clear();
        }
        Ok(())
    }

    /// Sends the deliveries that are due, each in a task of its own.
    async fn deliver(&self, notifiers: &[NotifierSpec]) -> Result<(), StoreError> {
        let free = self.slots.available_permits();
        if free == 0 {
            return Ok(());
        }
        let now = self.gateway.clock().now();
        let due = self.store().due_deliveries(now, free as i64).await?;
        for due in due {
            let notifier = notifiers
                .iter()
                .find(|n| n.name.as_str() == due.notifier)
                .cloned();
            if notifier.is_none() && now.0 - due.created_at.0 < UNKNOWN_GRACE_MS {
                continue;
            }
            let Ok(slot) = self.slots.clone().try_acquire_owned() else {
                break;
            };
            let until = now.plus(send::CLAIM);
            // The row as claimed: another replica may have attempted it since it was read.
            let Some(delivery) = self.store().claim_delivery(&due.id, now, until).await? else {
                continue;
            };
            let sender = self.sender.clone();
            tokio::spawn(async move {
                sender.send(notifier, delivery).await;
                drop(slot);
            });
        }
        Ok(())
    }
}
