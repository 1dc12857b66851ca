//! The `null` target: every call succeeds at once, so a run measures the harness alone.

use dbscope_core::TargetInfo;

use crate::target::{Dialect, Param, Session, StmtId, Target, TargetError, TargetResult};

/// A target that does nothing.
#[derive(Debug)]
pub struct NullTarget {
    settings: Vec<(String, String)>,
}

impl NullTarget {
    /// The null target; it accepts no settings (there is nothing to set).
    pub fn new(settings: &[(String, String)]) -> TargetResult<Self> {
        if let Some((name, _)) = settings.first() {
            return Err(TargetError::config(format!(
                "the null target has no settings; remove --set {name}=…"
            )));
        }
        Ok(NullTarget {
            settings: Vec::new(),
        })
    }
}

impl Target for NullTarget {
    fn kind(&self) -> &'static str {
        "null"
    }
    fn dialect(&self) -> Dialect {
        Dialect::Null
    }
    fn connect(&self) -> TargetResult<Box<dyn Session>> {
        Ok(Box::new(NullSession { stmts: 0 }))
    }
    fn describe(&self) -> TargetResult<TargetInfo> {
        Ok(TargetInfo {
            kind: "null".into(),
            location: "null".into(),
            server_version: format!("dbscope {} null target", env!("CARGO_PKG_VERSION")),
            settings_requested: self.settings.clone(),
            settings_effective: Default::default(),
        })
    }
}

struct NullSession {
    stmts: usize,
}

impl Session for NullSession {
    fn batch(&mut self, _sql: &str) -> TargetResult<()> {
        Ok(())
    }
    fn prepare(&mut self, _sql: &str) -> TargetResult<StmtId> {
        self.stmts += 1;
        Ok(StmtId(self.stmts - 1))
    }
    #[inline]
    fn execute(&mut self, _stmt: StmtId, _params: &[Param]) -> TargetResult<u64> {
        Ok(1)
    }
    fn query_i64(&mut self, _sql: &str) -> TargetResult<Vec<i64>> {
        Ok(Vec::new())
    }
    /// The null target holds no data: every query returns no rows.
    fn query_rows(
        &mut self,
        _sql: &str,
        _params: &[Param],
    ) -> TargetResult<Vec<Vec<Option<String>>>> {
        Ok(Vec::new())
    }
    #[inline]
    fn begin(&mut self) -> TargetResult<()> {
        Ok(())
    }
    #[inline]
    fn commit(&mut self) -> TargetResult<()> {
        Ok(())
    }
    fn rollback(&mut self) -> TargetResult<()> {
        Ok(())
    }
}
