//! The rotation of a tick's lanes: which lane may step next, and the rules between lanes (a
//! lane waiting for the work lane sleeps until it runs out of due work or budget; a step that
//! queued work wakes the idle work lane; a failed lane rests). Pure: the driver asks and says
//! how each step ended.

use crate::lane::LaneStep;

/// Where the lanes stand in this tick's rotation, and the rules between them. Pure: the loop asks
/// which lane may step and says how each step ended.
#[derive(Debug)]
pub(super) struct Rotation {
    slots: Vec<Slot>,
    /// The work lane's slot, whose running out of work wakes the lanes waiting for it.
    work: Option<usize>,
}

/// A lane's place in the rotation.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Nothing due (or it failed, or it sleeps): skipped until woken.
    idle: bool,
    /// Its next step does not fit the budget any more.
    out_of_budget: bool,
    /// Asleep until the work lane runs out of due work.
    waiting_for_work: bool,
}

impl Rotation {
    pub(super) fn new(lanes: usize, work: Option<usize>) -> Rotation {
        Rotation { slots: vec![Slot::default(); lanes], work }
    }

    /// Whether lane `k` may step.
    pub(super) fn ready(&self, k: usize) -> bool {
        let s = self.slots[k];
        !s.idle && !s.out_of_budget
    }

    /// `Some` once no lane may step, saying whether one still had due work but no budget left.
    pub(super) fn over(&self) -> Option<bool> {
        let over = self.slots.iter().all(|s| s.idle || s.out_of_budget);
        over.then(|| self.slots.iter().any(|s| s.out_of_budget && !s.idle))
    }

    /// Lane `k`'s next step does not fit the budget.
    pub(super) fn out_of_budget(&mut self, k: usize) {
        self.slots[k].out_of_budget = true;
        // The work lane will not run again this tick: whoever waited for it looks now.
        if self.work == Some(k) {
            self.wake_waiters();
        }
    }

    /// Lane `k` has nothing due.
    pub(super) fn nothing_due(&mut self, k: usize) {
        self.slots[k].idle = true;
        // The work lane ran out of due work: whoever waited for it looks again.
        if self.work == Some(k) {
            self.wake_waiters();
        }
    }

    /// Lane `k` failed: it rests for the rest of the tick, and the others go on.
    pub(super) fn failed(&mut self, k: usize) {
        self.slots[k].idle = true;
    }

    /// The daily budget has no room for lane `k`'s step: it rests until the next day, which is
    /// not a budget stop (no continuation is asked for it).
    pub(super) fn rest_for_the_day(&mut self, k: usize) {
        self.slots[k].idle = true;
    }

    /// Lane `k` stepped.
    pub(super) fn stepped(&mut self, k: usize, step: &LaneStep) {
        if step.wakes_work {
            if let Some(w) = self.work {
                self.slots[w].idle = false;
            }
        }
        // A run waiting for the queue sleeps until the work lane is idle or out of budget (if it
        // already is, the run's next look is its barrier step, the cheapest).
        if step.waits_for_work && self.work.is_some_and(|w| self.ready(w)) {
            self.slots[k].idle = true;
            self.slots[k].waiting_for_work = true;
        }
    }

    /// Wakes the lanes asleep until the work lane stops.
    fn wake_waiters(&mut self) {
        for s in self.slots.iter_mut().filter(|s| s.waiting_for_work) {
            s.waiting_for_work = false;
            s.idle = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORK: usize = 0;
    const REPAIR: usize = 2;

    fn waits_for_work() -> LaneStep {
        LaneStep { waits_for_work: true, ..LaneStep::progress() }
    }

    #[test]
    fn a_lane_waiting_for_work_sleeps_until_the_work_lane_runs_out_of_due_work() {
        let mut r = Rotation::new(3, Some(WORK));
        r.stepped(REPAIR, &waits_for_work());
        assert!(!r.ready(REPAIR), "asleep while the work lane runs");
        r.stepped(WORK, &LaneStep::progress());
        assert!(!r.ready(REPAIR));
        assert_eq!(r.over(), None, "the work lane still runs");
        r.nothing_due(WORK);
        assert!(r.ready(REPAIR), "woken: the work lane is idle");
    }

    #[test]
    fn a_lane_waiting_for_work_wakes_when_the_work_lane_is_out_of_budget() {
        let mut r = Rotation::new(3, Some(WORK));
        r.stepped(REPAIR, &waits_for_work());
        assert!(!r.ready(REPAIR));
        r.out_of_budget(WORK);
        assert!(r.ready(REPAIR), "the work lane will not run again this tick");
    }

    #[test]
    fn a_lane_does_not_wait_for_a_work_lane_that_cannot_run() {
        let mut r = Rotation::new(3, Some(WORK));
        r.nothing_due(WORK);
        r.stepped(REPAIR, &waits_for_work());
        assert!(r.ready(REPAIR), "its next look is its barrier step");
        let mut r = Rotation::new(3, None);
        r.stepped(1, &waits_for_work());
        assert!(r.ready(1), "no work lane");
    }

    #[test]
    fn only_the_work_lane_wakes_the_waiters() {
        let mut r = Rotation::new(3, Some(WORK));
        r.stepped(REPAIR, &waits_for_work());
        r.nothing_due(1);
        r.out_of_budget(1);
        assert!(!r.ready(REPAIR));
    }

    #[test]
    fn a_step_that_queued_work_wakes_the_idle_work_lane() {
        let mut r = Rotation::new(3, Some(WORK));
        r.nothing_due(WORK);
        assert!(!r.ready(WORK));
        r.stepped(REPAIR, &LaneStep::progress());
        assert!(!r.ready(WORK), "a step that queued nothing leaves it idle");
        r.stepped(REPAIR, &LaneStep { wakes_work: true, ..LaneStep::progress() });
        assert!(r.ready(WORK));
    }

    #[test]
    fn a_failed_lane_rests_and_the_rotation_ends_when_no_lane_may_step() {
        let mut r = Rotation::new(3, Some(WORK));
        r.failed(1);
        assert!(!r.ready(1) && r.ready(WORK));
        r.nothing_due(WORK);
        assert_eq!(r.over(), None);
        r.nothing_due(REPAIR);
        assert_eq!(r.over(), Some(false), "nothing left due");
        let mut r = Rotation::new(3, Some(WORK));
        r.nothing_due(WORK);
        r.nothing_due(1);
        r.out_of_budget(REPAIR);
        assert_eq!(r.over(), Some(true), "a lane had due work but no budget");
    }
}
