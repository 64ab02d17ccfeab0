//! Named network namespaces as `ip netns` keeps them: whether one exists, and which names
//! are safe to use as a path.

use std::path::Path;

/// Where `ip netns` keeps named namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// True if namespace `name` exists.
pub fn netns_exists(name: &str) -> bool {
    valid_name(name) && Path::new(NETNS_DIR).join(name).exists()
}

/// A name `ip netns` would accept and that cannot leave its directory.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
}
