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

use crate::error::ApiError;
use crate::ledger::{LedgerTask, LedgerTasks, TASKS_ROUTE};

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
    /// Each task's executor and shuffle output, from dbscope's task ledger; `None` when the
    /// scheduler keeps none (a stock Ballista scheduler).
    pub ledger: Option<Vec<LedgerTask>>,
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

    /// Sends `method path` with no body and waits at most 5 s for the answer; its status and body.
    async fn send(
        &self,
        method: hyper::Method,
        path: &str,
    ) -> Result<(hyper::StatusCode, Bytes), ApiError> {
        let http = |e: Box<dyn std::error::Error + Send + Sync>| ApiError::Http {
            path: path.to_string(),
            addr: self.addr.clone(),
            source: e,
        };
        let req = hyper::Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.addr))
            .body(Empty::<Bytes>::new())
            .map_err(|e| ApiError::Uri {
                path: path.to_string(),
                source: Box::new(e),
            })?;
        let resp = tokio::time::timeout(Duration::from_secs(5), self.client.request(req))
            .await
            .map_err(|_| ApiError::Timeout {
                path: path.to_string(),
                addr: self.addr.clone(),
                secs: 5,
            })?
            .map_err(|e| http(Box::new(e)))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| http(Box::new(e)))?
            .to_bytes();
        Ok((status, body))
    }

    /// GETs `path`; `Ok(None)` when the scheduler answers 404.
    async fn get_if_served(&self, path: &str) -> Result<Option<serde_json::Value>, ApiError> {
        let (status, body) = self.send(hyper::Method::GET, path).await?;
        if status.as_u16() == 404 {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(ApiError::Status {
                path: path.to_string(),
                addr: self.addr.clone(),
                status,
            });
        }
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| ApiError::Json {
                path: path.to_string(),
                addr: self.addr.clone(),
                source: e,
            })
    }

    async fn get(&self, path: &str) -> Result<serde_json::Value, ApiError> {
        self.get_if_served(path)
            .await?
            .ok_or_else(|| ApiError::NotServed {
                path: path.to_string(),
                addr: self.addr.clone(),
            })
    }

    /// What the executors reported about each task of a job, from dbscope's task ledger
    /// (`crate::ledger`); `Ok(None)` from a scheduler that does not keep one (stock Ballista).
    pub async fn ledger(&self, job_id: &str) -> Result<Option<Vec<LedgerTask>>, ApiError> {
        let path = TASKS_ROUTE.replace("{job_id}", job_id);
        match self.get_if_served(&path).await? {
            None => Ok(None),
            Some(v) => Ok(Some(Self::decode::<LedgerTasks>(&path, v)?.tasks)),
        }
    }

    fn decode<T: serde::de::DeserializeOwned>(
        path: &str,
        v: serde_json::Value,
    ) -> Result<T, ApiError> {
        serde_json::from_value(v).map_err(|e| ApiError::Unexpected {
            path: path.to_string(),
            source: e,
        })
    }

    /// The scheduler's Ballista version.
    pub async fn version(&self) -> Result<String, ApiError> {
        let v = self.get("/api/version").await?;
        Ok(v["version"].as_str().unwrap_or("?").to_string())
    }

    /// The executors registered now, sorted by host and port.
    pub async fn executors(&self) -> Result<Vec<ExecutorInfo>, ApiError> {
        let path = "/api/executors";
        let v = self.get(path).await?;
        let list = v
            .as_array()
            .ok_or_else(|| ApiError::NotAList {
                path: path.to_string(),
            })?
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
    /// Cancels the job named `name` if it is still queued or running (`PATCH /api/job/{id}`, as
    /// Ballista's own UI does); returns its id, or `None` when the scheduler lists no such job.
    pub async fn cancel_named(&self, name: &str) -> Result<Option<String>, ApiError> {
        let Some(job) = self.find_job(name).await? else {
            return Ok(None);
        };
        if !matches!(job.status.as_str(), "Queued" | "Running") {
            return Ok(Some(job.job_id));
        }
        let path = format!("/api/job/{}", job.job_id);
        let (status, _) = self.send(hyper::Method::PATCH, &path).await?;
        if !status.is_success() {
            return Err(ApiError::Status {
                path,
                addr: self.addr.clone(),
                status,
            });
        }
        Ok(Some(job.job_id))
    }

    pub async fn find_job(&self, name: &str) -> Result<Option<JobResponse>, ApiError> {
        let v = self.get("/api/jobs").await?;
        let jobs: Vec<JobResponse> = Self::decode("/api/jobs", v)?;
        Ok(jobs.into_iter().find(|j| j.job_name == name))
    }

    /// The stages of a job with their tasks.
    pub async fn stages(&self, job_id: &str) -> Result<Vec<QueryStageSummary>, ApiError> {
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
            Err(e) => report.unavailable.push(e.to_string()),
        }
        match self.executors().await {
            Ok(e) => report.executors = e,
            Err(e) => report.unavailable.push(e.to_string()),
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
        match report.job_id.clone() {
            None => report.unavailable.push(last_error.map_or_else(
                || format!("the scheduler at {} lists no job named {name:?}", self.addr),
                |e| e.to_string(),
            )),
            Some(id) => {
                match self.ledger(&id).await {
                    Ok(l) => report.ledger = l,
                    Err(e) => report.unavailable.push(e.to_string()),
                }
                report.unavailable.extend(last_error.map(|e| e.to_string()));
            }
        }
        report
    }

    async fn poll(&self, name: &str, report: &mut JobReport) -> Result<(), ApiError> {
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

    /// Serves `app` on a free loopback port; returns its address.
    async fn serve(app: axum::Router) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(l, app).await });
        addr
    }

    #[test]
    fn the_ledger_is_read_from_dbscope_s_scheduler_and_absent_from_a_stock_one() {
        let rt = crate::node::runtime().unwrap();
        rt.block_on(async {
            // A scheduler without the route (a stock Ballista one answers 404).
            let stock = serve(axum::Router::new()).await;
            assert_eq!(Rest::new(&stock).ledger("j1").await.unwrap(), None);
            // dbscope's: the ledger's own route and handler.
            let ledger = std::sync::Arc::new(crate::ledger::TaskLedger::default());
            ledger.note(
                "exec-a",
                &[ballista_core::serde::protobuf::TaskStatus {
                    task_id: 4,
                    job_id: "j1".into(),
                    stage_id: 2,
                    status: Some(
                        ballista_core::serde::protobuf::task_status::Status::Successful(
                            ballista_core::serde::protobuf::SuccessfulTask {
                                partitions: vec![
                                    ballista_core::serde::protobuf::ShuffleWritePartition {
                                        num_bytes: 777,
                                        num_rows: 3,
                                        ..Default::default()
                                    },
                                ],
                                ..Default::default()
                            },
                        ),
                    ),
                    ..Default::default()
                }],
            );
            let ours = serve(
                axum::Router::new()
                    .route(
                        TASKS_ROUTE,
                        axum::routing::get(crate::ledger::tasks_handler),
                    )
                    .with_state(ledger),
            )
            .await;
            let tasks = Rest::new(&ours).ledger("j1").await.unwrap().unwrap();
            assert_eq!(tasks.len(), 1);
            assert_eq!(
                (
                    tasks[0].executor_id.as_str(),
                    tasks[0].stage,
                    tasks[0].task,
                    tasks[0].bytes
                ),
                ("exec-a", 2, 4, 777)
            );
            assert_eq!(
                Rest::new(&ours).ledger("other").await.unwrap(),
                Some(vec![])
            );
        });
    }
}
