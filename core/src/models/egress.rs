//! Egress sidecar models (`/policy`).

use serde::{Deserialize, Serialize};

use super::lifecycle::NetworkPolicy;

/// Answer of the egress sidecar's `/policy` routes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyStatus {
    /// `ok` on success.
    #[serde(default)]
    pub status: Option<String>,
    /// `allow_all`, `deny_all` or `enforcing` (open set).
    #[serde(default)]
    pub mode: Option<String>,
    /// `dns` or `dns+nft` (open set).
    #[serde(default)]
    pub enforcement_mode: Option<String>,
    /// Extra explanation, e.g. `no matching targets found`.
    #[serde(default)]
    pub reason: Option<String>,
    /// The current policy (GET only).
    #[serde(default)]
    pub policy: Option<NetworkPolicy>,
}
