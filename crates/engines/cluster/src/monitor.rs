//! What the scheduler says about a job, while it runs and after: Ballista's REST API, which every
//! Ballista scheduler built with its default `rest-api` feature serves on its gRPC port (so a stock
//! cluster answers it as dbscope's embedded scheduler does). Read here: `/api/version`,
//! `/api/executors`, `/api/jobs` (to find the job by its unique name) and
//! `/api/job/{id}/stages` (every stage, and every task of it: partitions, times, rows in and out,
//! status and, for a failed task, Ballista's reason such as `ExecutorLost`).
//!
//! What the API does not say, so dbscope does not either: which executor ran a task and how many
//! bytes a task wrote to the shuffle (the scheduler knows both; Ballista 55's API leaves them out).

use std::time::Duration;

pub use ballista_api_types::dto::{JobResponse, QueryStageSummary, TaskStatus, TaskSummary};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;

/// An executor as the scheduler lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecutorInfo {
    /// Ballista's executor id.
    pub id: String,
    /// Host and Flight port it is reached at.
    pub host: String,
    /// Its Flight port.
    pub port: u16,
    /// Tasks it runs at once (Ballista's vcores).
    pub slots: u32,
}

/// Everything the scheduler said about one job.
#[derive(Clone, Debug, Default)]
pub struct JobReport {
    /// Ballista's job id, once the job was found.
    pub job_id: Option<String>,
    /// The job's last status line (`Completed. Produced …`, `Failed: …`).
    pub status: Option<String>,
    /// Job start and end on the scheduler's clock (ms since the Unix epoch; 0 when unknown).
    pub start_unix_ms: u64,
    /// See `start_unix_ms`.
    pub end_unix_ms: u64,
    /// Stages with their tasks, as last read.
    pub stages: Vec<QueryStageSummary>,
    /// The cluster's executors when the job was submitted.
    pub executors: Vec<ExecutorInfo>,
    /// The scheduler's Ballista version.
    pub scheduler_version: Option<String>,
    /// Why part of this could not be read (the job itself is unaffected).
    pub unavailable: Vec<String>,
}

/// What a stage does, from its plan: `map` when it scans the input files, `reduce` otherwise.
pub fn stage_kind(stage: &QueryStageSummary) -> &'static str {
    match &stage.stage_plan {
        Some(p) if p.contains("DataSourceExec") => "map",
        _ => "reduce",
    }
}

/// How many partitions (tasks, when a task takes one) the stage has, from the first line of its
/// plan (`ShuffleWriterExec: partitioning: Hash([…], 4)`: the writer keeps its input's
/// partitioning). None when the stage has not started or the line has another form.
pub fn stage_partitions(stage: &QueryStageSummary) -> Option<usize> {
    let first = stage.stage_plan.as_deref()?.lines().next()?.trim_end();
    let inner = first.strip_suffix(')')?;
    let digits: String = inner
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .chars()
        .rev()
        .collect();
    digits.parse().ok()
}

/// Partitions whose task succeeded.
fn partitions_done(stage: &QueryStageSummary) -> usize {
    stage
        .tasks
        .iter()
        .flatten()
        .filter(|t| matches!(t.status, TaskStatus::Successful))
        .map(|t| t.partition_id.len())
        .sum()
}

/// Tasks of the stage that failed (each was run again or failed the job).
pub fn failed_tasks(stage: &QueryStageSummary) -> usize {
    stage
        .tasks
        .iter()
        .flatten()
        .filter(|t| matches!(t.status, TaskStatus::Failed { .. }))
        .count()
}

/// Hadoop's progress line: `stage 1: map 63% · stage 2: reduce 0%`.
pub fn progress_line(stages: &[QueryStageSummary]) -> String {
    let mut sorted: Vec<&QueryStageSummary> = stages.iter().collect();
    sorted.sort_by_key(|s| s.stage_id.parse::<u64>().unwrap_or(u64::MAX));
    sorted
        .iter()
        .map(|s| {
            let pct = if s.stage_status == "Successful" {
                100
            } else {
                match stage_partitions(s) {
                    Some(n) if n > 0 => (partitions_done(s) * 100 / n).min(99),
                    _ => 0,
                }
            };
            let failed = failed_tasks(s);
            let failed = if failed > 0 {
                format!(" ({failed} task(s) failed)")
            } else {
                String::new()
            };
            format!("stage {}: {} {pct}%{failed}", s.stage_id, stage_kind(s))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A client of one scheduler's REST API.
#[derive(Clone)]
pub struct Rest {
    addr: String,
    client: Client<HttpConnector, Empty<Bytes>>,
}

impl Rest {
    /// For the scheduler at `HOST:PORT`.
    pub fn new(addr: &str) -> Self {
        Rest {
            addr: addr.to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    async fn get(&self, path: &str) -> Result<serde_json::Value, String> {
        let uri: hyper::Uri = format!("http://{}{path}", self.addr)
            .parse()
            .map_err(|e| format!("{path}: {e}"))?;
        let resp = tokio::time::timeout(Duration::from_secs(5), self.client.get(uri))
            .await
            .map_err(|_| format!("GET {path} on {}: no answer in 5 s", self.addr))?
            .map_err(|e| format!("GET {path} on {}: {e}", self.addr))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("GET {path} on {}: {e}", self.addr))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "GET {path} on {}: HTTP {status}{}",
                self.addr,
                if status.as_u16() == 404 {
                    " (a scheduler built without Ballista's rest-api feature does not serve it)"
                } else {
                    ""
                }
            ));
        }
        serde_json::from_slice(&body).map_err(|e| format!("GET {path} on {}: {e}", self.addr))
    }

    fn decode<T: serde::de::DeserializeOwned>(
        path: &str,
        v: serde_json::Value,
    ) -> Result<T, String> {
        serde_json::from_value(v).map_err(|e| format!("GET {path}: unexpected answer: {e}"))
    }

    /// The scheduler's Ballista version.
    pub async fn version(&self) -> Result<String, String> {
        let v = self.get("/api/version").await?;
        Ok(v["version"].as_str().unwrap_or("?").to_string())
    }

    /// The executors registered now, sorted by host and port.
    pub async fn executors(&self) -> Result<Vec<ExecutorInfo>, String> {
        let v = self.get("/api/executors").await?;
        let list = v
            .as_array()
            .ok_or("GET /api/executors: not a list")?
            .iter()
            .map(|e| ExecutorInfo {
                id: e["id"].as_str().unwrap_or("?").to_string(),
                host: e["host"].as_str().unwrap_or("?").to_string(),
                port: e["port"].as_u64().unwrap_or(0) as u16,
                slots: e["specification"]["vcores"].as_u64().unwrap_or(0) as u32,
            });
        let mut list: Vec<ExecutorInfo> = list.collect();
        list.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
        Ok(list)
    }

    /// The job named `name`, if the scheduler knows it.
    pub async fn find_job(&self, name: &str) -> Result<Option<JobResponse>, String> {
        let v = self.get("/api/jobs").await?;
        let jobs: Vec<JobResponse> = Self::decode("/api/jobs", v)?;
        Ok(jobs.into_iter().find(|j| j.job_name == name))
    }

    /// The stages of a job with their tasks.
    pub async fn stages(&self, job_id: &str) -> Result<Vec<QueryStageSummary>, String> {
        let path = format!("/api/job/{job_id}/stages");
        let v = self.get(&path).await?;
        let r: ballista_api_types::dto::QueryStagesResponse = Self::decode(&path, v)?;
        let mut stages = r.stages;
        stages.sort_by_key(|s| s.stage_id.parse::<u64>().unwrap_or(u64::MAX));
        Ok(stages)
    }

    /// Polls the job named `name` until `done` fires, calling `progress` with each new progress
    /// line; returns what it last read. Errors reading are kept in the report, never fatal.
    pub async fn watch(
        &self,
        name: &str,
        mut done: tokio::sync::watch::Receiver<bool>,
        mut progress: impl FnMut(&str) + Send,
    ) -> JobReport {
        let mut report = JobReport::default();
        match self.version().await {
            Ok(v) => report.scheduler_version = Some(v),
            Err(e) => report.unavailable.push(e),
        }
        match self.executors().await {
            Ok(e) => report.executors = e,
            Err(e) => report.unavailable.push(e),
        }
        let mut last_line = String::new();
        let mut last_error = None;
        loop {
            let finished = *done.borrow();
            match self.poll(name, &mut report).await {
                Ok(()) => {
                    let line = progress_line(&report.stages);
                    if !line.is_empty() && line != last_line {
                        progress(&line);
                        last_line = line;
                    }
                }
                Err(e) => last_error = Some(e),
            }
            if finished {
                // One more read after the job ended, so the last tasks' statuses are in.
                break;
            }
            tokio::select! {
                _ = done.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            }
        }
        if report.job_id.is_none() {
            report.unavailable.push(last_error.unwrap_or_else(|| {
                format!("the scheduler at {} lists no job named {name:?}", self.addr)
            }));
        } else if let Some(e) = last_error {
            report.unavailable.push(e);
        }
        report
    }

    async fn poll(&self, name: &str, report: &mut JobReport) -> Result<(), String> {
        let Some(job) = self.find_job(name).await? else {
            return Ok(());
        };
        report.status = Some(job.job_status.clone());
        report.start_unix_ms = job.start_time;
        report.end_unix_ms = job.end_time;
        report.stages = self.stages(&job.job_id).await?;
        report.job_id = Some(job.job_id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(
        id: &str,
        status: &str,
        plan: Option<&str>,
        tasks: &[(bool, usize)],
    ) -> QueryStageSummary {
        QueryStageSummary {
            stage_id: id.into(),
            stage_status: status.into(),
            input_rows: 0,
            output_rows: 0,
            elapsed_compute: None,
            stage_plan: plan.map(str::to_string),
            task_duration_percentiles: None,
            task_input_percentiles: None,
            tasks: tasks
                .iter()
                .enumerate()
                .map(|(i, &(ok, parts))| {
                    Some(TaskSummary {
                        id: i,
                        status: if ok {
                            TaskStatus::Successful
                        } else {
                            TaskStatus::Running
                        },
                        partition_id: (0..parts as u32).collect(),
                        scheduled_time: 0,
                        launch_time: 0,
                        start_exec_time: 0,
                        end_exec_time: 0,
                        exec_duration: 0,
                        finish_time: 0,
                        input_rows: 0,
                        output_rows: 0,
                    })
                })
                .collect(),
        }
    }

    #[test]
    fn progress_reads_the_partitions_from_the_stage_plan() {
        let map = "ShuffleWriterExec: partitioning: Hash([l_returnflag@0, l_linestatus@1], 8)\n  DataSourceExec: file_groups={8 groups}";
        let reduce = "ShuffleWriterExec: partitioning: UnknownPartitioning(4)\n  ShuffleReaderExec";
        let stages = vec![
            stage("2", "Running", Some(reduce), &[(true, 1), (false, 1)]),
            stage(
                "1",
                "Running",
                Some(map),
                &[(true, 1), (true, 1), (true, 3), (false, 1)],
            ),
            stage("3", "Unresolved", None, &[]),
        ];
        assert_eq!(stage_partitions(&stages[1]), Some(8));
        assert_eq!(stage_partitions(&stages[0]), Some(4));
        assert_eq!(stage_partitions(&stages[2]), None);
        assert_eq!(
            progress_line(&stages),
            "stage 1: map 62% · stage 2: reduce 25% · stage 3: reduce 0%"
        );
        let done = vec![stage("1", "Successful", Some(map), &[(true, 8)])];
        assert_eq!(progress_line(&done), "stage 1: map 100%");
    }
}
