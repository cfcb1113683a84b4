//! A deterministic simulation of the worker: the real handlers, lanes and SQL on SQLite, many
//! operations interleaved statement by statement by a seeded scheduler, with crashes,
//! commit-unknowns, transient errors, storage failures and client retries injected, on a
//! simulated clock; invariants checked against a model written apart from the product's SQL.
//!
//! `npm run sim -- --seed S --ops N` runs one seed; `--seeds 1,2,3` several; `--trace FILE`
//! replays a saved trace (a failure saves one, shrunk with `--shrink`); `--replay DIR` replays
//! every trace of a directory. docs/simulation.md says what it models and what it does not.

mod model;
mod ops;
mod rng;
mod sim;
mod world;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use sim::{Event, Generator, Sim, Stats};

/// A saved trace: the seed its ids are drawn from, then its events.
#[derive(Serialize, Deserialize)]
struct Header {
    seed: u64,
    violation: String,
}

struct Failure {
    violation: String,
    /// Operations started before the invariant broke.
    ops: u64,
    events: Vec<Event>,
    log: Vec<String>,
}

/// Runs events from `next` (given how many operations are in flight) until they end or an
/// invariant breaks.
fn run(seed: u64, verbose: bool, mut next: impl FnMut(&[u64]) -> Option<Event>) -> Result<(Stats, u64), Failure> {
    let mut sim = Sim::new(seed, verbose);
    let mut events = Vec::new();
    while let Some(event) = next(&sim.in_flight()) {
        sim.apply(&event);
        events.push(event);
        let first = sim.world.violations.borrow().first().cloned();
        if let Some(violation) = first {
            return Err(Failure { violation, ops: sim.stats.ops, events, log: sim.log.clone() });
        }
    }
    Ok((sim.stats.clone(), sim.world.faults_fired.get()))
}

fn replay(seed: u64, events: &[Event], verbose: bool) -> Result<(Stats, u64), Failure> {
    let mut it = events.iter().cloned();
    run(seed, verbose, move |_| it.next())
}

/// The first words of a violation: what kind of invariant broke.
fn kind(violation: &str) -> String {
    violation
        .split_whitespace()
        .filter(|w| !w.starts_with('#') && !w.chars().any(|c| c.is_ascii_digit()))
        .take(4)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Removes events while the run still breaks an invariant of the same kind (delta debugging),
/// for at most `seconds`: first whole operations (an operation's start and its steps), then
/// single events.
fn shrink(seed: u64, failure: &Failure, seconds: u64) -> Vec<Event> {
    let started = Instant::now();
    let wanted = kind(&failure.violation);
    let fails = |events: &[Event]| match replay(seed, events, false) {
        Err(f) if kind(&f.violation) == wanted => Some(f.events),
        _ => None,
    };
    let mut events = failure.events.clone();
    for by_operation in [true, false] {
        let mut chunk = usize::MAX;
        loop {
            // The units: an operation (its spawn and steps) or a single event.
            let units: Vec<Vec<usize>> = if by_operation {
                let mut ops: std::collections::BTreeMap<u64, Vec<usize>> = std::collections::BTreeMap::new();
                for (i, e) in events.iter().enumerate() {
                    match e {
                        Event::Spawn { id, .. } => ops.entry(*id).or_default().push(i),
                        Event::Step { op } => ops.entry(op & !1).or_default().push(i),
                        _ => {}
                    }
                }
                ops.into_values().collect()
            } else {
                (0..events.len()).map(|i| vec![i]).collect()
            };
            chunk = chunk.min(units.len() / 2).max(1);
            let mut progress = false;
            let mut at = 0;
            while at < units.len() && started.elapsed().as_secs() < seconds {
                let drop: std::collections::BTreeSet<usize> =
                    units[at..(at + chunk).min(units.len())].iter().flatten().copied().collect();
                let candidate: Vec<Event> =
                    events.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, e)| e.clone()).collect();
                if let Some(shorter) = fails(&candidate) {
                    events = shorter;
                    progress = true;
                    break;
                }
                at += chunk;
            }
            if started.elapsed().as_secs() >= seconds {
                return events;
            }
            if !progress {
                if chunk == 1 {
                    break;
                }
                chunk /= 2;
            }
        }
    }
    events
}

fn save(path: &Path, seed: u64, violation: &str, events: &[Event]) {
    let mut text = serde_json::to_string(&Header { seed, violation: violation.to_owned() }).expect("a header");
    for e in events {
        text.push('\n');
        text.push_str(&serde_json::to_string(e).expect("an event"));
    }
    text.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("the trace directory");
    }
    std::fs::write(path, text).expect("the trace file");
}

fn load(path: &Path) -> Result<(Header, Vec<Event>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().ok_or(format!("{}: empty trace", path.display()))?;
    let header: Header = serde_json::from_str(first).map_err(|e| format!("{}: header: {e}", path.display()))?;
    let events = lines
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}: {l}", path.display())))
        .collect::<Result<_, _>>()?;
    Ok((header, events))
}

struct Args {
    seeds: Vec<u64>,
    ops: u64,
    trace: Option<PathBuf>,
    replay: Option<PathBuf>,
    shrink: bool,
    verbose: bool,
}

fn args() -> Result<Args, String> {
    let mut a = Args { seeds: vec![1], ops: 25_000, trace: None, replay: None, shrink: false, verbose: false };
    let mut it = std::env::args();
    it.next(); // the program's name
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--seed" => a.seeds = vec![value()?.parse().map_err(|e| format!("--seed: {e}"))?],
            "--seeds" => {
                a.seeds = value()?
                    .split(',')
                    .map(|s| s.trim().parse())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--seeds: {e}"))?
            }
            "--ops" => a.ops = value()?.parse().map_err(|e| format!("--ops: {e}"))?,
            "--trace" => a.trace = Some(value()?.into()),
            "--replay" => a.replay = Some(value()?.into()),
            "--shrink" => a.shrink = true,
            "-v" | "--verbose" => a.verbose = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn report_failure(seed: u64, failure: &Failure, shrink_it: bool) -> ExitCode {
    eprintln!(
        "sim: invariant broken (seed {seed}) after {} operations ({} events):\n  {}",
        failure.ops,
        failure.events.len(),
        failure.violation
    );
    for line in failure
        .log
        .iter()
        .rev()
        .take(if failure.log.len() > 400 { 40 } else { 400 })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        eprintln!("    {line}");
    }
    if !failure.log.is_empty() {
        let log = PathBuf::from(format!("target/sim/log-{seed}.txt"));
        let _ = std::fs::create_dir_all("target/sim");
        if std::fs::write(&log, failure.log.join("\n")).is_ok() {
            eprintln!("sim: the whole log: {}", log.display());
        }
    }
    let path = PathBuf::from(format!("target/sim/failure-{seed}.jsonl"));
    save(&path, seed, &failure.violation, &failure.events);
    eprintln!("sim: trace saved to {} (replay: npm run sim -- --trace {})", path.display(), path.display());
    if shrink_it {
        let events = shrink(seed, failure, 240);
        let shrunk = PathBuf::from(format!("target/sim/shrunk-{seed}.jsonl"));
        save(&shrunk, seed, &failure.violation, &events);
        eprintln!("sim: shrunk to {} events: {}", events.len(), shrunk.display());
        if let Err(f) = replay(seed, &events, true) {
            for line in &f.log {
                eprintln!("    {line}");
            }
            eprintln!("  {}", f.violation);
        }
    }
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("sim: {e}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let mut traces: Vec<PathBuf> = a.trace.iter().cloned().collect();
    if let Some(dir) = &a.replay {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        traces.extend(files);
    }
    if a.replay.is_some() && traces.is_empty() {
        println!("sim: no trace to replay");
        return ExitCode::SUCCESS;
    }
    if !traces.is_empty() {
        for path in &traces {
            let (header, events) = match load(path) {
                Ok(trace) => trace,
                Err(e) => {
                    eprintln!("sim: {e}");
                    return ExitCode::from(2);
                }
            };
            match replay(header.seed, &events, a.verbose) {
                Ok((stats, faults)) => println!(
                    "sim: {} replayed: {} operations, {faults} faults, invariants held (once: {})",
                    path.display(),
                    stats.ops,
                    header.violation
                ),
                Err(f) => return report_failure(header.seed, &f, a.shrink),
            }
        }
        return ExitCode::SUCCESS;
    }
    let (mut ops, mut faults, mut interleavings) = (0, 0, 0);
    for &seed in &a.seeds {
        let t = Instant::now();
        let mut generator = Generator::new(seed, a.ops);
        match run(seed, a.verbose, |in_flight| generator.next(in_flight)) {
            Ok((stats, f)) => {
                let secs = t.elapsed().as_secs_f64();
                println!(
                    "sim: seed {seed}: {} operations ({} retries, {} ticks, {} split jobs at {} ms of CPU, {} quiescences), {f} faults (rate {:.2}), {:.2} interleavings per operation, {} answers 5xx after a fault, {:.0} operations/s",
                    stats.ops,
                    stats.retries,
                    stats.ticks,
                    stats.split_jobs,
                    sim::cpu_ms(seed),
                    stats.quiescences,
                    sim::fault_rate(seed),
                    stats.interleavings as f64 / stats.ops.max(1) as f64,
                    stats.answers_5xx,
                    stats.ops as f64 / secs
                );
                ops += stats.ops;
                faults += f;
                interleavings += stats.interleavings;
            }
            Err(failure) => return report_failure(seed, &failure, a.shrink),
        }
    }
    let seeds = a.seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let secs = started.elapsed().as_secs_f64();
    println!(
        "sim: {secs:.0} s, {:.0} operations/s, {:.2} interleavings per operation",
        ops as f64 / secs.max(0.001),
        interleavings as f64 / ops.max(1) as f64
    );
    println!("sim: {ops} operations, {faults} faults, invariants held (seed {seeds})");
    ExitCode::SUCCESS
}
