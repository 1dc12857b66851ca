//! Atomic file writes: a temporary file in the same directory, then renamed over the
//! target, so a crash leaves either the old file or the new one, never half of one.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// A temporary file beside `path` that becomes `path` on [`AtomicFile::commit`] and disappears
/// if dropped before (an export that fails half-way leaves nothing behind).
#[derive(Debug)]
pub struct AtomicFile {
    tmp: tempfile::NamedTempFile,
    path: std::path::PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file in `path`'s directory (the current one for a bare name).
    pub fn create(path: &Path) -> Result<Self> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| format!(".{}.", n.to_string_lossy()))
            .unwrap_or_else(|| ".dbscope.".into());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&name).suffix(".tmp");
        // As `File::create` would: 0666 less the umask, not tempfile's private 0600, since the
        // files written this way (manifests, exports) are read by other users and tools.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder.tempfile_in(dir).map_err(|e| Error::io(path, e))?;
        Ok(AtomicFile {
            tmp,
            path: path.to_owned(),
        })
    }

    /// The file to write into.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.tmp.as_file_mut()
    }

    /// Flushes and renames the temporary file over the target. No fsync: this guards against a
    /// killed process (the crash dbscope meets), and counters rewritten four times a second must not
    /// add syncs to the device being measured.
    pub fn commit(mut self) -> Result<()> {
        let path = self.path;
        self.tmp
            .as_file_mut()
            .flush()
            .map_err(|e| Error::io(&path, e))?;
        self.tmp
            .persist(&path)
            .map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.flush()
    }
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.file().write_all(bytes).map_err(|e| Error::io(path, e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_and_drop_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "old").unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let err = write_atomic(&dir.path().join("no/such/dir/x"), b"x").unwrap_err();
        assert!(err.to_string().contains("no/such/dir/x"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn permissions_are_those_of_file_create() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let atomic = dir.path().join("atomic");
        write_atomic(&atomic, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&atomic), mode(&plain));
    }
}
