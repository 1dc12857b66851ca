//! The few system calls std does not wrap (block-device sector-size ioctls); the only module of
//! the io tree allowed `unsafe`, each call with its SAFETY note.
#![allow(unsafe_code)]

use std::fs::File;
use std::os::fd::AsRawFd;

/// Logical and physical sector sizes of a block device opened as `f`, via `BLKSSZGET` and
/// `BLKPBSZGET`.
pub fn block_device_sizes(f: &File) -> std::io::Result<(u32, u32)> {
    let fd = f.as_raw_fd();
    let mut logical: libc::c_int = 0;
    // SAFETY: `fd` is an open descriptor owned by `f`, alive for the call; BLKSSZGET writes one
    // c_int through the pointer, which points at a live, properly aligned local.
    let rc = unsafe { libc::ioctl(fd, libc::BLKSSZGET, &mut logical as *mut libc::c_int) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut physical: libc::c_uint = 0;
    // SAFETY: as above; BLKPBSZGET writes one unsigned int into the live local `physical`.
    let rc = unsafe { libc::ioctl(fd, libc::BLKPBSZGET, &mut physical as *mut libc::c_uint) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((logical.max(0) as u32, physical))
}
