//! Which transport carries the messages between two ranks: the collective-level
//! shared-memory pipes ([`crate::pipe`]) when the ranks share a machine, linerate TCP over
//! their link otherwise.
//!
//! | `LINERATE_TRANSPORT` / `init(transport=)` | ranks on the shared-memory fabric | ranks on a link (`LINERATE_LINK`) |
//! | --- | --- | --- |
//! | `auto` (default) | pipes (a fabric is one machine by construction) | TCP over the link (the ranks may be on different machines) |
//! | `shm` | pipes | pipes (the user says all ranks share this machine) |
//! | `tcp` | TCP over the fabric's rings | TCP over the link |
//!
//! The TCP connections are set up either way: they carry the mesh's set-up and tell a rank
//! that a peer is gone; with pipes, the operations' messages go through the pipes only.

use crate::CollectiveError;

/// The transport choice (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Transport {
    /// Pipes between ranks on one machine's fabric, TCP over a link.
    #[default]
    Auto,
    /// Pipes to every peer.
    Shm,
    /// TCP to every peer.
    Tcp,
}

impl Transport {
    /// Parses `auto`, `shm` or `tcp`.
    pub fn parse(s: &str) -> Result<Transport, CollectiveError> {
        match s.trim() {
            "auto" | "" => Ok(Transport::Auto),
            "shm" => Ok(Transport::Shm),
            "tcp" => Ok(Transport::Tcp),
            other => Err(CollectiveError::BadArgument(format!(
                "transport {other:?}: one of auto, shm, tcp (LINERATE_TRANSPORT or transport=)"
            ))),
        }
    }

    /// `LINERATE_TRANSPORT`, or [`Transport::Auto`] when unset.
    pub fn from_env() -> Result<Transport, CollectiveError> {
        std::env::var("LINERATE_TRANSPORT").map_or(Ok(Transport::Auto), |v| Transport::parse(&v))
    }

    /// [`crate::Config::shm`] for a rank of job `job` (the fabric's name, or the launcher's
    /// job name on a link), on the fabric (`on_fabric`) or on a link.
    pub fn shm_job(self, on_fabric: bool, job: Option<&str>) -> Result<Option<String>, CollectiveError> {
        match (self, on_fabric) {
            (Transport::Tcp, _) | (Transport::Auto, false) => Ok(None),
            (Transport::Auto, true) | (Transport::Shm, _) => match job {
                Some(j) => Ok(Some(j.to_string())),
                None => Err(CollectiveError::BadArgument(
                    "the shared-memory transport needs the job's name (LINERATE_FABRIC or the launcher's job id)"
                        .into(),
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_follows_the_table() {
        let job = Some("j");
        assert_eq!(Transport::parse(" shm ").unwrap(), Transport::Shm);
        assert!(Transport::parse("rdma").unwrap_err().to_string().contains("one of auto, shm, tcp"));
        assert_eq!(Transport::Auto.shm_job(true, job).unwrap().as_deref(), Some("j"));
        assert_eq!(Transport::Auto.shm_job(false, job).unwrap(), None);
        assert_eq!(Transport::Shm.shm_job(false, job).unwrap().as_deref(), Some("j"));
        assert_eq!(Transport::Tcp.shm_job(true, job).unwrap(), None);
        assert!(Transport::Shm.shm_job(false, None).is_err());
    }
}
