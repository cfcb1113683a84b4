//! The states and phases the index stores in TEXT columns, as enums.
//!
//! Each is decoded from its column (an unknown word is a decode error, never a fallback
//! branch), written back through [`as_str`](QueueState::as_str) (bound as that word by
//! `repo::encode`), and pinned in the database by a
//! `CHECK` constraint or a check trigger (migrations `0005` and `0006`), so neither side can
//! drift alone.

use std::fmt;

use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize, Serializer};

/// Defines a fieldless enum stored as fixed lowercase words.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The stored word.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value a stored word names, if any.
            pub fn parse(raw: &str) -> Option<$name> {
                match raw {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                $name::parse(&raw)
                    .ok_or_else(|| D::Error::custom(format!("unknown {} {raw:?}", stringify!($name))))
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

text_enum! {
    /// Where a leased queue row stands: work rows and collection deletions share these.
    QueueState {
        /// Due at `next_attempt_at`.
        Pending = "pending",
        /// Failed before; due again at `next_attempt_at` (backing off).
        Retry = "retry",
        /// Held under `lease_token` until `lease_expires_at`; claimable again once expired.
        Leased = "leased",
        /// Failed for good; only an operator retry reopens it.
        Failed = "failed",
    }
}

text_enum! {
    /// The phase of a repair run.
    RepairPhase {
        /// Queue every entry of the content table, in id order.
        Scan = "scan",
        /// Queue every stored source whose entry is gone.
        Sources = "sources",
        /// Wait for the queue to drain, then finalise coverage.
        Barrier = "barrier",
    }
}

text_enum! {
    /// How a cron tick ended.
    TickOutcome {
        /// Nothing was due.
        Idle = "idle",
        /// Work was done and nothing stopped the tick early.
        Progress = "progress",
        /// The budget ran out with work possibly left.
        Budget = "budget",
        /// A lane failed (the others went on); the cause is in the worker log.
        Error = "error",
    }
}

text_enum! {
    /// A collection's coverage status. `Unknown` is never stored: it is what a reader makes of
    /// a word it does not know, so that aggregation fails closed.
    CoverageStatus {
        Never = "never",
        Running = "running",
        Complete = "complete",
        Partial = "partial",
        Failed = "failed",
        Stale = "stale",
        Unknown = "unknown",
    }
}

text_enum! {
    /// Whether a collection's capture triggers accept content writes.
    CaptureState {
        Installing = "installing",
        Ready = "ready",
        /// Writes are accepted and queued.
        Active = "active",
        /// A collection deletion has fenced the collection: every write is refused.
        Deleting = "deleting",
    }
}

text_enum! {
    /// The phase of a collection deletion, in the order they run. The first three run inside the
    /// DELETE request (and are resumed by the tick after a crash); the rest are cleanup by ticks.
    DeletionPhase {
        /// Fence content writes: capture state `active` → `deleting`.
        Fence = "fence",
        /// Delete the registry row (its fields cascade): the collection disappears from the API.
        Registry = "registry",
        /// Drop the content table.
        Table = "table",
        /// Delete the collection's queued work and its entries' revisions.
        Work = "work",
        /// Delete its occurrences, then its source rows.
        Sources = "sources",
        /// Delete its repair runs and its coverage row.
        Status = "status",
        /// Verify nothing is left and delete the tombstone: the slug is free again.
        Finalize = "finalize",
    }
}

text_enum! {
    /// The phase of a field deletion, in the order they run (both by cron ticks; the DELETE
    /// request has already taken the field out of the registry and its column out of reach).
    FieldDeletionPhase {
        /// Delete the field's occurrences from the usage index, walking the collection's
        /// occurrences in key order; coverage is not complete meanwhile.
        Occurrences = "occurrences",
        /// Drop the field's renamed column, then the deletion row.
        Column = "column",
    }
}

impl DeletionPhase {
    /// The phases run inside the DELETE request.
    pub fn is_front(self) -> bool {
        matches!(self, DeletionPhase::Fence | DeletionPhase::Registry | DeletionPhase::Table)
    }

    /// The phase after this one (`None` after `finalize`).
    pub fn next(self) -> Option<DeletionPhase> {
        let i = Self::ALL.iter().position(|p| *p == self)?;
        Self::ALL.get(i + 1).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_and_unknown_words_are_errors() {
        for s in QueueState::ALL {
            assert_eq!(QueueState::parse(s.as_str()), Some(*s));
            let json = serde_json::to_string(s).unwrap();
            assert_eq!(serde_json::from_str::<QueueState>(&json).unwrap(), *s);
        }
        assert!(serde_json::from_str::<RepairPhase>("\"finalise\"").is_err());
        assert!(serde_json::from_str::<DeletionPhase>("\"Fence\"").is_err());
        assert_eq!(TickOutcome::parse("budget"), Some(TickOutcome::Budget));
    }

    #[test]
    fn deletion_phases_run_in_order() {
        let order: Vec<&str> = DeletionPhase::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(order, ["fence", "registry", "table", "work", "sources", "status", "finalize"]);
        assert_eq!(DeletionPhase::Table.next(), Some(DeletionPhase::Work));
        assert_eq!(DeletionPhase::Finalize.next(), None);
        let front: Vec<DeletionPhase> = DeletionPhase::ALL.iter().copied().filter(|p| p.is_front()).collect();
        assert_eq!(front, [DeletionPhase::Fence, DeletionPhase::Registry, DeletionPhase::Table]);
        let order: Vec<&str> = FieldDeletionPhase::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(order, ["occurrences", "column"]);
    }
}
