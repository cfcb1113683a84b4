//! The JS clock, for elapsed time only (budgets, metering).

use crate::clock::Clock;

#[derive(Debug, Clone, Copy)]
pub struct DateClock;

impl Clock for DateClock {
    fn now_ms(&self) -> f64 {
        js_sys::Date::now()
    }
}
