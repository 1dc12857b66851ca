//! The task ledger: what each executor reported about each task, kept by dbscope's embedded
//! scheduler and served beside Ballista's REST API.
//!
//! Ballista's REST API (`/api/job/{id}/stages`) gives every task's times and row counts but not
//! which executor ran it or how many bytes it wrote to the shuffle, though the executors send
//! both (`UpdateTaskStatusParams.executor_id`, `SuccessfulTask.partitions[].num_bytes`). The
//! scheduler's own accessor for them is crate-private, so the embedded scheduler serves Ballista's
//! gRPC service through [`Observed`], which notes each terminal status as it arrives and hands
//! the call on unchanged. `GET /dbscope/v1/job/{job_id}/tasks` returns the notes of one job as
//! JSON ([`LedgerTasks`]). A stock Ballista scheduler does not serve the route (HTTP 404); runs
//! against one say so and record no executor or bytes per task.

use std::collections::{BTreeMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Path, State};
use axum::Json;
use ballista_core::serde::protobuf::scheduler_grpc_server::SchedulerGrpc;
use ballista_core::serde::protobuf::{
    failed_task::FailedReason, operator_metric, task_status, CancelJobParams, CancelJobResult,
    CleanJobDataParams, CleanJobDataResult, CreateUpdateSessionParams, CreateUpdateSessionResult,
    ExecuteQueryParams, ExecuteQueryResult, ExecutorStoppedParams, ExecutorStoppedResult,
    GetJobMetricsParams, GetJobMetricsResult, GetJobStatusParams, GetJobStatusResult,
    HeartBeatParams, HeartBeatResult, PollWorkParams, PollWorkResult, RegisterExecutorParams,
    RegisterExecutorResult, RemoveSessionParams, RemoveSessionResult, TaskStatus,
    UpdateTaskStatusParams, UpdateTaskStatusResult,
};
use ballista_scheduler::scheduler_server::SchedulerServer;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use serde::{Deserialize, Serialize};
use tonic::{Request, Response, Status};

/// The route's path, with `{job_id}` to fill in.
pub const TASKS_ROUTE: &str = "/dbscope/v1/job/{job_id}/tasks";

/// Jobs kept (the oldest are dropped first): a scheduler runs for days.
const JOBS_KEPT: usize = 256;

/// One task attempt as its executor reported it at its end.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerTask {
    /// Stage id.
    pub stage: u32,
    /// Ballista's task id (unique within the job; a rerun is a new task).
    pub task: u32,
    /// The stage attempt it belonged to.
    pub stage_attempt: u32,
    /// The executor that reported it.
    pub executor_id: String,
    /// `successful`, or the failure's kind (`ExecutionError`, `IoError`, …).
    pub outcome: String,
    /// Shuffle (or result) files it wrote.
    pub files: u32,
    /// Bytes in those files (Arrow IPC, as the executor counted them).
    pub bytes: u64,
    /// Rows in those files.
    pub rows: u64,
    /// DataFusion's `elapsed_compute` summed over the task's operators, ns: the time its
    /// operators spent computing (not waiting for input), the nearest to Hadoop's "CPU time
    /// spent" that an executor reports. 0 from a scheduler of an earlier dbscope.
    #[serde(default)]
    pub compute_ns: u64,
}

/// The route's answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LedgerTasks {
    /// The job asked for.
    pub job_id: String,
    /// Its tasks' reports, by stage and task id; empty when the scheduler has none (yet).
    pub tasks: Vec<LedgerTask>,
}

/// One job's notes, by (stage, task).
type JobNotes = (String, BTreeMap<(u32, u32), LedgerTask>);

/// The notes of the most recent jobs.
#[derive(Default)]
pub struct TaskLedger {
    jobs: Mutex<VecDeque<JobNotes>>,
}

impl TaskLedger {
    /// Notes the terminal statuses in `statuses`, reported by `executor_id`; running ones are
    /// skipped (a later report replaces them).
    pub fn note(&self, executor_id: &str, statuses: &[TaskStatus]) {
        let mut jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        for s in statuses {
            let (outcome, partitions) = match &s.status {
                Some(task_status::Status::Successful(ok)) => {
                    ("successful".to_string(), ok.partitions.as_slice())
                }
                Some(task_status::Status::Failed(f)) => (failed_kind(&f.failed_reason), &[][..]),
                _ => continue,
            };
            let task = LedgerTask {
                stage: s.stage_id,
                task: s.task_id,
                stage_attempt: s.stage_attempt_num,
                executor_id: executor_id.to_string(),
                outcome,
                files: partitions.len() as u32,
                bytes: partitions.iter().map(|p| p.num_bytes).sum(),
                rows: partitions.iter().map(|p| p.num_rows).sum(),
                compute_ns: s
                    .metrics
                    .iter()
                    .flat_map(|set| &set.metrics)
                    .filter_map(|m| match m.metric {
                        Some(operator_metric::Metric::ElapseTime(ns)) => Some(ns),
                        _ => None,
                    })
                    .sum(),
            };
            let at = match jobs.iter().position(|(id, _)| *id == s.job_id) {
                Some(at) => at,
                None => {
                    if jobs.len() == JOBS_KEPT {
                        jobs.pop_front();
                    }
                    jobs.push_back((s.job_id.clone(), BTreeMap::new()));
                    jobs.len() - 1
                }
            };
            jobs[at].1.insert((task.stage, task.task), task);
        }
    }

    /// The notes of one job.
    pub fn job(&self, job_id: &str) -> LedgerTasks {
        let jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        LedgerTasks {
            job_id: job_id.to_string(),
            tasks: jobs
                .iter()
                .find(|(id, _)| id == job_id)
                .map(|(_, t)| t.values().cloned().collect())
                .unwrap_or_default(),
        }
    }
}

fn failed_kind(reason: &Option<FailedReason>) -> String {
    match reason {
        Some(FailedReason::ExecutionError(_)) => "ExecutionError",
        Some(FailedReason::FetchPartitionError(_)) => "FetchPartitionError",
        Some(FailedReason::IoError(_)) => "IoError",
        Some(FailedReason::ExecutorLost(_)) => "ExecutorLost",
        Some(FailedReason::ResultLost(_)) => "ResultLost",
        Some(FailedReason::TaskKilled(_)) => "TaskKilled",
        None => "failed",
    }
    .to_string()
}

/// `GET /dbscope/v1/job/{job_id}/tasks`.
pub async fn tasks_handler(
    State(ledger): State<Arc<TaskLedger>>,
    Path(job_id): Path<String>,
) -> Json<LedgerTasks> {
    Json(ledger.job(&job_id))
}

type Inner = SchedulerServer<LogicalPlanNode, PhysicalPlanNode>;

/// Ballista's scheduler gRPC service with the task statuses noted on their way in; every call is
/// Ballista's own, unchanged.
#[derive(Clone)]
pub struct Observed {
    /// The scheduler.
    pub inner: Inner,
    /// Where the statuses are noted.
    pub ledger: Arc<TaskLedger>,
}

type Reply<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl SchedulerGrpc for Observed {
    type ExecuteQueryPushStream = Pin<
        Box<
            dyn tonic::codegen::tokio_stream::Stream<Item = Result<GetJobStatusResult, Status>>
                + Send
                + 'static,
        >,
    >;

    async fn poll_work(&self, r: Request<PollWorkParams>) -> Reply<PollWorkResult> {
        if let Some(m) = &r.get_ref().metadata {
            self.ledger.note(&m.id, &r.get_ref().task_status);
        }
        SchedulerGrpc::poll_work(&self.inner, r).await
    }

    async fn update_task_status(
        &self,
        r: Request<UpdateTaskStatusParams>,
    ) -> Reply<UpdateTaskStatusResult> {
        let p = r.get_ref();
        self.ledger.note(&p.executor_id, &p.task_status);
        SchedulerGrpc::update_task_status(&self.inner, r).await
    }

    async fn register_executor(
        &self,
        r: Request<RegisterExecutorParams>,
    ) -> Reply<RegisterExecutorResult> {
        SchedulerGrpc::register_executor(&self.inner, r).await
    }

    async fn heart_beat_from_executor(
        &self,
        r: Request<HeartBeatParams>,
    ) -> Reply<HeartBeatResult> {
        SchedulerGrpc::heart_beat_from_executor(&self.inner, r).await
    }

    async fn create_update_session(
        &self,
        r: Request<CreateUpdateSessionParams>,
    ) -> Reply<CreateUpdateSessionResult> {
        SchedulerGrpc::create_update_session(&self.inner, r).await
    }

    async fn remove_session(&self, r: Request<RemoveSessionParams>) -> Reply<RemoveSessionResult> {
        SchedulerGrpc::remove_session(&self.inner, r).await
    }

    async fn execute_query_push(
        &self,
        r: Request<ExecuteQueryParams>,
    ) -> Reply<Self::ExecuteQueryPushStream> {
        SchedulerGrpc::execute_query_push(&self.inner, r).await
    }

    async fn execute_query(&self, r: Request<ExecuteQueryParams>) -> Reply<ExecuteQueryResult> {
        SchedulerGrpc::execute_query(&self.inner, r).await
    }

    async fn get_job_status(&self, r: Request<GetJobStatusParams>) -> Reply<GetJobStatusResult> {
        SchedulerGrpc::get_job_status(&self.inner, r).await
    }

    async fn get_job_metrics(&self, r: Request<GetJobMetricsParams>) -> Reply<GetJobMetricsResult> {
        SchedulerGrpc::get_job_metrics(&self.inner, r).await
    }

    async fn executor_stopped(
        &self,
        r: Request<ExecutorStoppedParams>,
    ) -> Reply<ExecutorStoppedResult> {
        SchedulerGrpc::executor_stopped(&self.inner, r).await
    }

    async fn cancel_job(&self, r: Request<CancelJobParams>) -> Reply<CancelJobResult> {
        SchedulerGrpc::cancel_job(&self.inner, r).await
    }

    async fn clean_job_data(&self, r: Request<CleanJobDataParams>) -> Reply<CleanJobDataResult> {
        SchedulerGrpc::clean_job_data(&self.inner, r).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ballista_core::serde::protobuf::{
        FailedTask, IoError, ShuffleWritePartition, SuccessfulTask,
    };

    fn status(job: &str, stage: u32, task: u32, s: task_status::Status) -> TaskStatus {
        TaskStatus {
            task_id: task,
            job_id: job.into(),
            stage_id: stage,
            status: Some(s),
            ..TaskStatus::default()
        }
    }

    fn ok(bytes: &[u64]) -> task_status::Status {
        task_status::Status::Successful(SuccessfulTask {
            executor_id: "e1".into(),
            partitions: bytes
                .iter()
                .enumerate()
                .map(|(i, &b)| ShuffleWritePartition {
                    partition_id: i as u64,
                    num_rows: 10,
                    num_bytes: b,
                    ..ShuffleWritePartition::default()
                })
                .collect(),
            ..SuccessfulTask::default()
        })
    }

    #[test]
    fn terminal_statuses_are_kept_per_job_with_their_executor_and_bytes() {
        let l = TaskLedger::default();
        l.note(
            "e1",
            &[
                status("j1", 1, 0, ok(&[100, 23])),
                status("j1", 1, 1, task_status::Status::Running(Default::default())),
                status("j2", 1, 0, ok(&[5])),
            ],
        );
        l.note(
            "e2",
            &[status(
                "j1",
                2,
                2,
                task_status::Status::Failed(FailedTask {
                    failed_reason: Some(FailedReason::IoError(IoError {})),
                    ..FailedTask::default()
                }),
            )],
        );
        let j1 = l.job("j1");
        assert_eq!(j1.tasks.len(), 2, "the running task is not a result");
        assert_eq!(
            (
                j1.tasks[0].executor_id.as_str(),
                j1.tasks[0].bytes,
                j1.tasks[0].rows,
                j1.tasks[0].files
            ),
            ("e1", 123, 20, 2)
        );
        assert_eq!(
            (
                j1.tasks[1].executor_id.as_str(),
                j1.tasks[1].outcome.as_str(),
                j1.tasks[1].bytes
            ),
            ("e2", "IoError", 0)
        );
        assert_eq!(l.job("j2").tasks[0].bytes, 5);
        assert!(l.job("nope").tasks.is_empty());
    }

    #[test]
    fn old_jobs_are_dropped_first() {
        let l = TaskLedger::default();
        for j in 0..=JOBS_KEPT {
            l.note("e", &[status(&format!("j{j}"), 1, 0, ok(&[1]))]);
        }
        assert!(l.job("j0").tasks.is_empty());
        assert_eq!(l.job("j1").tasks.len(), 1);
        assert_eq!(l.job(&format!("j{JOBS_KEPT}")).tasks.len(), 1);
    }
}
