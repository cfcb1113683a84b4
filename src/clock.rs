//! Elapsed-time source for budgets and metering. Never used to stamp rows: stored timestamps
//! come from the database clock (`strftime('%Y-%m-%dT%H:%M:%fZ','now')`).

/// Milliseconds from an arbitrary origin; only differences are meaningful.
pub trait Clock {
    fn now_ms(&self) -> f64;
}

impl<C: Clock> Clock for &C {
    fn now_ms(&self) -> f64 {
        (**self).now_ms()
    }
}

/// Monotonic native clock.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Debug)]
pub struct MonotonicClock(std::time::Instant);

#[cfg(not(target_arch = "wasm32"))]
impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock(std::time::Instant::now())
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Clock for MonotonicClock {
    fn now_ms(&self) -> f64 {
        self.0.elapsed().as_secs_f64() * 1000.0
    }
}

/// A clock given as a plain function (the edge passes the JS clock; tests a fixed one).
#[derive(Debug, Clone, Copy)]
pub struct FnClock(pub fn() -> f64);

impl Clock for FnClock {
    fn now_ms(&self) -> f64 {
        (self.0)()
    }
}
