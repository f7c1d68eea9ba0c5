//! Long jobs (download, benchmark, generation): each gets an id, runs on its own thread, streams
//! `JobEvent`s to a sink (the UI's channel) and can be cancelled. Their state stays queryable, so
//! a reloaded window or a test can ask how a job ended.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

use sdbench_bench::kernels::CompileWatch;
use sdbench_diffusion::CancelToken;

use crate::errors::{ErrorKind, UiError, UiResult};
use crate::events::{JobEvent, JobNews};

pub type JobId = u64;

/// Where a job's events go (the command's `Channel`, or a test's collector).
pub type Sink = Arc<dyn Fn(&JobEvent) + Send + Sync>;

/// Ended jobs kept for `status` (their outputs can be large).
const KEEP_ENDED: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub enum JobKind {
    Download,
    Benchmark,
    Generation,
}

impl JobKind {
    /// "a benchmark", for messages.
    pub fn label(self) -> &'static str {
        match self {
            JobKind::Download => "a model download",
            JobKind::Benchmark => "a benchmark",
            JobKind::Generation => "an image generation",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
#[serde(
    tag = "state",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum JobState {
    Running,
    Finished { output: serde_json::Value },
    Failed { error: UiError },
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    pub id: JobId,
    pub kind: JobKind,
    #[serde(flatten)]
    pub state: JobState,
    /// The latest progress event, for a view that attaches late.
    pub last_event: Option<JobEvent>,
    /// Events sent so far.
    pub events: u64,
    pub elapsed_seconds: f64,
}

struct Entry {
    kind: JobKind,
    cancel: CancelToken,
    state: JobState,
    last_event: Option<JobEvent>,
    events: u64,
    started: Instant,
    ended: Option<Instant>,
    /// The last event (finished/failed/cancelled) has been handed to the sink.
    last_sent: bool,
    /// Where events go now: the starting window's channel, or a reloaded window's (`attach`).
    sink: Sink,
}

impl Entry {
    fn status(&self, id: JobId) -> JobStatus {
        JobStatus {
            id,
            kind: self.kind,
            state: self.state.clone(),
            last_event: self.last_event.clone(),
            events: self.events,
            elapsed_seconds: self
                .ended
                .unwrap_or_else(Instant::now)
                .duration_since(self.started)
                .as_secs_f64(),
        }
    }
}

#[derive(Default)]
struct Table {
    next: JobId,
    jobs: HashMap<JobId, Entry>,
}

#[derive(Default, Clone)]
pub struct Jobs {
    shared: Arc<(Mutex<Table>, Condvar)>,
}

/// What a running job sees: its cancel token and a way to report progress.
#[derive(Clone)]
pub struct JobContext {
    id: JobId,
    jobs: Jobs,
    pub cancel: CancelToken,
}

impl JobContext {
    pub fn emit(&self, event: JobEvent) {
        let sink = match self.jobs.table().jobs.get_mut(&self.id) {
            Some(entry) => {
                entry.events += 1;
                entry.last_event = Some(event.clone());
                entry.sink.clone()
            }
            None => return,
        };
        sink(&event);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl Jobs {
    fn table(&self) -> MutexGuard<'_, Table> {
        // A panic inside a job is caught before it could poison the table; recover regardless.
        self.shared.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `work` on its own thread. One job runs at a time: a second one would disturb a
    /// benchmark's timing and compete for the device's memory.
    pub fn start<F>(&self, kind: JobKind, sink: Sink, work: F) -> UiResult<JobId>
    where
        F: FnOnce(&JobContext) -> UiResult<serde_json::Value> + Send + 'static,
    {
        let cancel = CancelToken::new();
        let id = {
            let mut table = self.table();
            if let Some(running) = table.jobs.values().find(|e| e.state == JobState::Running) {
                return Err(UiError::new(
                    ErrorKind::Busy,
                    format!("{} is running", capitalise(running.kind.label())),
                    "Wait for it to finish or cancel it, then try again.",
                ));
            }
            prune(&mut table);
            table.next += 1;
            let id = table.next;
            table.jobs.insert(
                id,
                Entry {
                    kind,
                    cancel: cancel.clone(),
                    state: JobState::Running,
                    last_event: None,
                    events: 0,
                    started: Instant::now(),
                    ended: None,
                    last_sent: false,
                    sink,
                },
            );
            id
        };
        let context = JobContext {
            id,
            jobs: self.clone(),
            cancel,
        };
        let spawned = std::thread::Builder::new()
            .name(format!("sdbench-job-{id}"))
            .spawn(move || {
                // Compilation of GPU kernels (minutes on a first run) shows while it happens.
                let reporter = context.clone();
                let watch = CompileWatch::start(Duration::from_secs(1), move |news| {
                    reporter.emit(JobEvent::from(news))
                });
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| work(&context)));
                drop(watch);
                let state = match outcome {
                    Ok(Ok(output)) => JobState::Finished { output },
                    Ok(Err(e)) if e.kind == ErrorKind::Cancelled => JobState::Cancelled,
                    Ok(Err(error)) => JobState::Failed { error },
                    Err(panic) => JobState::Failed {
                        error: UiError::internal(format!(
                            "The job stopped unexpectedly: {}",
                            panic_text(&panic)
                        )),
                    },
                };
                context.jobs.end(id, state, true);
            });
        if let Err(e) = spawned {
            let error = UiError::internal(format!("Could not start a thread for the job: {e}"));
            // The command returns the error itself: no event for it.
            self.end(
                id,
                JobState::Failed {
                    error: error.clone(),
                },
                false,
            );
            return Err(error);
        }
        Ok(id)
    }

    fn end(&self, id: JobId, state: JobState, send: bool) {
        let last = match &state {
            JobState::Finished { output } => JobNews::Finished {
                output: output.clone(),
            },
            JobState::Failed { error } => JobNews::Failed {
                error: error.clone(),
            },
            JobState::Cancelled | JobState::Running => JobNews::Cancelled,
        };
        let last = JobEvent::Job(last);
        // The state changes before the last event is sent, so a view that reacts to that event can
        // start the next job at once; `wait` returns only once the event has been sent. The sink
        // is taken with the state change: a window that attaches later sees the job ended.
        let sink = {
            let mut table = self.table();
            table.jobs.get_mut(&id).map(|entry| {
                entry.state = state;
                entry.ended = Some(Instant::now());
                entry.sink.clone()
            })
        };
        if let (Some(sink), true) = (sink, send) {
            sink(&last);
        }
        if let Some(entry) = self.table().jobs.get_mut(&id) {
            entry.last_sent = true;
        }
        self.shared.1.notify_all();
    }

    /// Asks a job to stop; it ends at the next step or file chunk. False when it had already ended.
    pub fn cancel(&self, id: JobId) -> UiResult<bool> {
        let table = self.table();
        let entry = table
            .jobs
            .get(&id)
            .ok_or_else(|| UiError::not_found(format!("There is no job {id}")))?;
        if entry.state != JobState::Running {
            return Ok(false);
        }
        entry.cancel.cancel();
        Ok(true)
    }

    pub fn status(&self, id: JobId) -> UiResult<JobStatus> {
        let table = self.table();
        table
            .jobs
            .get(&id)
            .map(|e| e.status(id))
            .ok_or_else(|| UiError::not_found(format!("There is no job {id}")))
    }

    /// Sends a running job's later events, its last one included, to `sink` instead (a reloaded
    /// window's channel; the old one is gone). Returns the job's status: one that has ended
    /// already says how, and its sink is left alone.
    pub fn attach(&self, id: JobId, sink: Sink) -> UiResult<JobStatus> {
        let mut table = self.table();
        let entry = table
            .jobs
            .get_mut(&id)
            .ok_or_else(|| UiError::not_found(format!("There is no job {id}")))?;
        if entry.state == JobState::Running {
            entry.sink = sink;
        }
        Ok(entry.status(id))
    }

    /// The running job, if any.
    pub fn running(&self) -> Option<JobStatus> {
        let table = self.table();
        table
            .jobs
            .iter()
            .find(|(_, e)| e.state == JobState::Running)
            .map(|(id, e)| e.status(*id))
    }

    /// Waits until the job has ended and sent its last event, or `timeout` passed; returns its
    /// status either way.
    pub fn wait(&self, id: JobId, timeout: Duration) -> UiResult<JobStatus> {
        let deadline = Instant::now() + timeout;
        let mut table = self.table();
        loop {
            let entry = table
                .jobs
                .get(&id)
                .ok_or_else(|| UiError::not_found(format!("There is no job {id}")))?;
            let now = Instant::now();
            if entry.last_sent || now >= deadline {
                return Ok(entry.status(id));
            }
            table = self
                .shared
                .1
                .wait_timeout(table, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Drops the oldest ended jobs beyond `KEEP_ENDED`.
fn prune(table: &mut Table) {
    let mut ended: Vec<(JobId, Instant)> = table
        .jobs
        .iter()
        .filter_map(|(id, e)| e.ended.map(|t| (*id, t)))
        .collect();
    if ended.len() < KEEP_ENDED {
        return;
    }
    ended.sort_by_key(|(_, t)| *t);
    for (id, _) in &ended[..=ended.len() - KEEP_ENDED] {
        table.jobs.remove(id);
    }
}

pub(crate) fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
        .unwrap_or_default()
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collector() -> (Sink, Arc<Mutex<Vec<JobEvent>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        let sink: Sink = Arc::new(move |e: &JobEvent| sink_seen.lock().unwrap().push(e.clone()));
        (sink, seen)
    }

    const WAIT: Duration = Duration::from_secs(10);

    #[test]
    fn a_job_streams_events_and_ends_with_its_output() {
        let jobs = Jobs::default();
        let (sink, seen) = collector();
        let id = jobs
            .start(JobKind::Generation, sink, |cx| {
                cx.emit(JobEvent::note("hi"));
                Ok(serde_json::json!({"answer": 42}))
            })
            .unwrap();
        let status = jobs.wait(id, WAIT).unwrap();
        assert_eq!(
            status.state,
            JobState::Finished {
                output: serde_json::json!({"answer": 42})
            }
        );
        assert_eq!(status.events, 1);
        // `wait` returns once the last event has been sent.
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert!(matches!(seen[1], JobEvent::Job(JobNews::Finished { .. })));
    }

    #[test]
    fn one_job_at_a_time_and_cancel_stops_it() {
        let jobs = Jobs::default();
        let (sink, seen) = collector();
        let id = jobs
            .start(JobKind::Benchmark, sink.clone(), |cx| {
                while !cx.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(UiError::cancelled())
            })
            .unwrap();
        let busy = jobs
            .start(JobKind::Download, sink, |_| Ok(serde_json::Value::Null))
            .unwrap_err();
        assert_eq!(busy.kind, ErrorKind::Busy);
        assert!(busy.message.contains("A benchmark is running"), "{busy:?}");
        assert_eq!(jobs.running().unwrap().id, id);

        assert!(jobs.cancel(id).unwrap());
        assert_eq!(jobs.wait(id, WAIT).unwrap().state, JobState::Cancelled);
        assert!(
            !jobs.cancel(id).unwrap(),
            "an ended job cannot be cancelled"
        );
        assert_eq!(
            seen.lock().unwrap().last(),
            Some(&JobEvent::Job(JobNews::Cancelled))
        );
        assert!(jobs.running().is_none());
        assert_eq!(jobs.cancel(999).unwrap_err().kind, ErrorKind::NotFound);
    }

    /// A reloaded window attaches its own channel: the job's later events, its last included, go
    /// there and no longer to the window that is gone; the status carries the latest event.
    #[test]
    fn a_window_that_attaches_gets_the_rest_of_the_job() {
        let jobs = Jobs::default();
        let (first, first_seen) = collector();
        let (go_on, wait_here) = std::sync::mpsc::channel::<()>();
        let id = jobs
            .start(JobKind::Benchmark, first, move |cx| {
                cx.emit(JobEvent::note("before"));
                wait_here.recv().unwrap();
                cx.emit(JobEvent::note("after"));
                Ok(serde_json::json!("done"))
            })
            .unwrap();
        // Wait for the first event, then attach as a reloaded window would.
        let deadline = Instant::now() + WAIT;
        while jobs.status(id).unwrap().events == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let (second, second_seen) = collector();
        let status = jobs.attach(id, second).unwrap();
        assert_eq!(status.state, JobState::Running);
        assert_eq!(status.last_event, Some(JobEvent::note("before")));
        go_on.send(()).unwrap();
        jobs.wait(id, WAIT).unwrap();
        assert_eq!(first_seen.lock().unwrap().len(), 1, "only what came before");
        let second_seen = second_seen.lock().unwrap();
        assert_eq!(second_seen.len(), 2);
        assert_eq!(second_seen[0], JobEvent::note("after"));
        assert!(matches!(
            second_seen[1],
            JobEvent::Job(JobNews::Finished { .. })
        ));

        // Attaching to an ended job says how it ended; an unknown id is not found.
        let (late, late_seen) = collector();
        let ended = jobs.attach(id, late).unwrap();
        assert!(matches!(ended.state, JobState::Finished { .. }));
        assert!(late_seen.lock().unwrap().is_empty());
        assert_eq!(
            jobs.attach(999, collector().0).unwrap_err().kind,
            ErrorKind::NotFound
        );
    }

    #[test]
    fn failures_and_panics_become_readable_errors() {
        let jobs = Jobs::default();
        let (sink, _) = collector();
        let id = jobs
            .start(JobKind::Download, sink.clone(), |_| {
                Err(UiError::bad_input("no", "fix it"))
            })
            .unwrap();
        let status = jobs.wait(id, WAIT).unwrap();
        assert!(matches!(status.state, JobState::Failed { ref error } if error.message == "no"));

        let id = jobs
            .start(JobKind::Download, sink, |_| panic!("boom"))
            .unwrap();
        match jobs.wait(id, WAIT).unwrap().state {
            JobState::Failed { error } => {
                assert_eq!(error.kind, ErrorKind::Internal);
                assert!(error.message.contains("boom"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn old_ended_jobs_are_forgotten() {
        let jobs = Jobs::default();
        let (sink, _) = collector();
        let mut ids = Vec::new();
        for _ in 0..KEEP_ENDED + 3 {
            let id = jobs
                .start(JobKind::Download, sink.clone(), |_| {
                    Ok(serde_json::Value::Null)
                })
                .unwrap();
            jobs.wait(id, WAIT).unwrap();
            ids.push(id);
        }
        assert_eq!(jobs.status(ids[0]).unwrap_err().kind, ErrorKind::NotFound);
        assert!(jobs.status(*ids.last().unwrap()).is_ok());
    }
}
