//! Sends result files to a collection endpoint, keeping the ones that cannot be sent in an outbox
//! to send later.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};
use crate::result::{write_atomically, BenchResult};

/// SD Bench's own files (outbox, history): `SDBENCH_DATA_DIR`, else the platform data folder
/// (`~/.local/share/sdbench` on Linux).
pub fn data_dir() -> PathBuf {
    std::env::var_os("SDBENCH_DATA_DIR")
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("sdbench")))
        .unwrap_or_else(|| PathBuf::from(".sdbench"))
}

/// Where results wait to be sent: `{data_dir}/outbox`.
pub fn default_outbox() -> PathBuf {
    data_dir().join("outbox")
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Sent {
        status: u16,
        /// What an SD Bench results service (`sdbench-server`) answered; `None` from another
        /// kind of endpoint.
        reply: Option<ServiceReply>,
    },
    /// Could not be sent; saved in the outbox.
    Queued { path: PathBuf, reason: String },
}

/// How a run compares with the service's other runs of its GPU, workload, backend, precision
/// and memory profile (the service computes it when it stores the run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub gpu: String,
    /// The other runs compared (this one is not among them).
    pub runs: usize,
    pub median_images_per_minute: f64,
    /// The share of the other runs slower than this one (ties count half), 0 to 100.
    pub percentile: f64,
}

/// How a run's mean CLIP score compares with the other runs of its workload scored by the same
/// CLIP model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualityComparison {
    pub clip_score_mean: f64,
    /// The other runs compared.
    pub runs: usize,
    /// Their median, where there are any.
    pub median: Option<f64>,
    /// Far below the others (judged only against enough of them; see the service's rule).
    pub far_below: bool,
    /// Why it was not judged, where it was not.
    pub not_judged: Option<String>,
}

/// The results service's answer to a submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceReply {
    pub id: String,
    /// The run's page, relative to the service (`/runs/ID`).
    pub url: String,
    /// The run was there already (sent before, under this id or with the same figures).
    pub duplicate: bool,
    /// Whether the images match the service's reference hashes; `None`: it has none for the model.
    pub reference_match: Option<bool>,
    /// The hardware's state the service found in the run's samples: "steady", "throttled" (ranked
    /// apart from the others) or "unknown" (absent from older services).
    #[serde(default)]
    pub hardware_state: Option<String>,
    pub comparison: Comparison,
    /// Where the run has a CLIP score: how it compares (absent from older services).
    #[serde(default)]
    pub quality: Option<QualityComparison>,
}

impl ServiceReply {
    /// The run's page as an absolute address on the service that `endpoint` belongs to: the
    /// endpoint less its `/api/v1/results` (a service under a path prefix keeps it), else its
    /// origin.
    pub fn page(&self, endpoint: &str) -> String {
        let base = endpoint.trim_end_matches('/');
        let base = base.strip_suffix("/api/v1/results").unwrap_or_else(|| {
            base.find("://")
                .and_then(|scheme| {
                    base[scheme + 3..]
                        .find('/')
                        .map(|p| &base[..scheme + 3 + p])
                })
                .unwrap_or(base)
        });
        format!("{base}{}", self.url)
    }

    /// "your run vs 12 runs of …": one paragraph for the CLI and the app.
    pub fn describe(&self, endpoint: &str) -> String {
        let c = &self.comparison;
        let place = match c.runs {
            0 => format!("the first run of {} with this setup on the service", c.gpu),
            n => format!(
                "your run vs {n} other {} of {} (same workload, backend, precision and memory profile): faster than {:.0}% of {}; {} {:.2} images/min",
                plural(n, "run", "runs"),
                c.gpu,
                c.percentile,
                plural(n, "it", "them"),
                plural(n, "it made", "their median is"),
                c.median_images_per_minute
            ),
        };
        let reference = match self.reference_match {
            Some(true) => "; the images match the reference",
            Some(false) => "; the images DIFFER from the reference",
            None => "",
        };
        let throttled = match self.hardware_state.as_deref() {
            Some("throttled") => {
                "; the device was throttled during the run, so the leaderboard ranks it apart from steady runs"
            }
            _ => "",
        };
        let quality = match &self.quality {
            Some(q) if q.far_below => format!(
                "; its CLIP score {:.2} is FAR BELOW the median {:.2} of {} other {} of this workload: look at its pictures",
                q.clip_score_mean,
                q.median.unwrap_or(0.0),
                q.runs,
                plural(q.runs, "run", "runs")
            ),
            _ => String::new(),
        };
        let duplicate = if self.duplicate {
            " (already there)"
        } else {
            ""
        };
        format!(
            "{place}{reference}{throttled}{quality}. Page{duplicate}: {}",
            self.page(endpoint)
        )
    }
}

/// `one` for 1, `many` otherwise.
pub fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

pub struct Submitter {
    endpoint: String,
    outbox: PathBuf,
    attempts: u32,
    delay: Duration,
    agent: ureq::Agent,
}

impl Submitter {
    pub fn new(endpoint: &str, outbox: PathBuf) -> Result<Submitter> {
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(BenchError::Submit {
                endpoint: endpoint.into(),
                reason: "the endpoint must be an http:// or https:// URL".into(),
            });
        }
        Ok(Submitter {
            endpoint: endpoint.into(),
            outbox,
            attempts: 4,
            delay: Duration::from_millis(500),
            agent: ureq::AgentBuilder::new()
                .timeout_connect(Duration::from_secs(10))
                .timeout(Duration::from_secs(60))
                .user_agent(concat!("sdbench/", env!("CARGO_PKG_VERSION")))
                .build(),
        })
    }

    /// Retry `attempts` times, waiting `delay`, doubling.
    pub fn with_retries(mut self, attempts: u32, delay: Duration) -> Submitter {
        self.attempts = attempts.max(1);
        self.delay = delay;
        self
    }

    /// POSTs one result (retrying); on failure it goes to the outbox.
    pub fn submit(&self, result: &BenchResult) -> Result<Outcome> {
        let body = result.to_json();
        match self.post(&body) {
            Ok((status, answer)) => Ok(Outcome::Sent {
                status,
                reply: serde_json::from_str(&answer).ok(),
            }),
            Err(Failure::Refused(reason)) => Err(BenchError::Submit {
                endpoint: self.endpoint.clone(),
                reason,
            }),
            Err(Failure::Unreachable(reason)) => {
                std::fs::create_dir_all(&self.outbox)
                    .map_err(|e| BenchError::io(&self.outbox, e))?;
                let path = self.outbox.join(format!("{}.json", result.run_id));
                write_atomically(&path, body.as_bytes())?;
                Ok(Outcome::Queued { path, reason })
            }
        }
    }

    /// Sends every result waiting in the outbox; sent ones are removed. Returns (file, outcome).
    pub fn flush_outbox(&self) -> Vec<(PathBuf, std::result::Result<u16, String>)> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.outbox)
            .map(|it| {
                it.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
            .into_iter()
            .map(|path| {
                let outcome = std::fs::read_to_string(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|body| {
                        self.post(&body)
                            .map(|(status, _)| status)
                            .map_err(|f| f.to_string())
                    });
                if outcome.is_ok() {
                    let _ = std::fs::remove_file(&path);
                }
                (path, outcome)
            })
            .collect()
    }

    /// The status and the body of the answer.
    fn post(&self, body: &str) -> std::result::Result<(u16, String), Failure> {
        let mut delay = self.delay;
        let mut last = String::new();
        for attempt in 0..self.attempts {
            if attempt > 0 {
                std::thread::sleep(delay);
                delay *= 2;
            }
            match self
                .agent
                .post(&self.endpoint)
                .set("Content-Type", "application/json")
                .send_string(body)
            {
                Ok(response) => {
                    let status = response.status();
                    return Ok((status, response.into_string().unwrap_or_default()));
                }
                // A refusal of the content will not change on retry.
                Err(ureq::Error::Status(code, response))
                    if (400..500).contains(&code) && code != 429 =>
                {
                    let text = response.into_string().unwrap_or_default();
                    return Err(Failure::Refused(format!(
                        "the endpoint refused the result: HTTP {code} {}",
                        text.trim()
                    )));
                }
                Err(ureq::Error::Status(code, _)) => last = format!("HTTP {code}"),
                Err(ureq::Error::Transport(t)) => last = t.to_string(),
            }
        }
        Err(Failure::Unreachable(format!(
            "{} attempts failed; last: {last}",
            self.attempts
        )))
    }
}

/// Why a POST failed: worth retrying later, or not.
enum Failure {
    Unreachable(String),
    Refused(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(s) | Failure::Refused(s) => f.write_str(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_page_is_on_the_service_the_endpoint_names() {
        let reply = ServiceReply {
            id: "r".into(),
            url: "/runs/r".into(),
            duplicate: false,
            reference_match: None,
            hardware_state: None,
            quality: None,
            comparison: Comparison {
                gpu: "GPU".into(),
                runs: 3,
                median_images_per_minute: 20.0,
                percentile: 50.0,
            },
        };
        for (endpoint, page) in [
            (
                "http://127.0.0.1:8080/api/v1/results",
                "http://127.0.0.1:8080/runs/r",
            ),
            (
                "https://x.org/sdbench/api/v1/results/",
                "https://x.org/sdbench/runs/r",
            ),
            ("https://x.org/collect", "https://x.org/runs/r"),
            ("https://x.org", "https://x.org/runs/r"),
        ] {
            assert_eq!(reply.page(endpoint), page);
        }
        let said = reply.describe("https://x.org/api/v1/results");
        assert!(
            said.starts_with("your run vs 3 other runs of GPU"),
            "{said}"
        );
        assert!(said.contains("faster than 50% of them; their median is 20.00 images/min"));
        assert!(!said.contains("throttled"), "{said}");
        let mut hot = reply.clone();
        hot.hardware_state = Some("throttled".into());
        let said = hot.describe("https://x.org/api/v1/results");
        assert!(said.contains("; the device was throttled during the run, so the leaderboard ranks it apart from steady runs. Page: https://x.org/runs/r"), "{said}");
        let mut low = reply.clone();
        low.quality = Some(QualityComparison {
            clip_score_mean: 12.0,
            runs: 10,
            median: Some(30.5),
            far_below: true,
            not_judged: None,
        });
        let said = low.describe("https://x.org/api/v1/results");
        assert!(said.contains("; its CLIP score 12.00 is FAR BELOW the median 30.50 of 10 other runs of this workload: look at its pictures. Page"), "{said}");
        low.quality.as_mut().unwrap().far_below = false;
        assert!(!low.describe("https://x.org").contains("CLIP"));
        let mut second = reply.clone();
        second.comparison.runs = 1;
        second.comparison.percentile = 0.0;
        let said = second.describe("https://x.org/api/v1/results");
        assert!(
            said.starts_with("your run vs 1 other run of GPU (same workload, backend, precision and memory profile): faster than 0% of it; it made 20.00 images/min"),
            "{said}"
        );
        second.comparison.runs = 0;
        let said = second.describe("https://x.org/api/v1/results");
        assert!(
            said.starts_with("the first run of GPU with this setup"),
            "{said}"
        );
    }
}
