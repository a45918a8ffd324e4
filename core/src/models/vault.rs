//! (1.1) Credential vault models (the egress API's `/credential-vault`, protocol.md
//! §5.2). Values are write-only: nothing the server answers carries them.

use serde::{Deserialize, Serialize};

/// Where a credential's value comes from; only `inline` exists.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlineCredentialSource {
    /// `inline`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The secret (write-only).
    pub value: String,
}

impl std::fmt::Debug for InlineCredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineCredentialSource")
            .field("kind", &self.kind)
            .field("value", &"<redacted>")
            .finish()
    }
}

/// A named credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// Name bindings refer to.
    pub name: String,
    /// The value.
    pub source: InlineCredentialSource,
}

/// Which requests a binding applies to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CredentialMatch {
    /// FQDNs or `*.domain`.
    pub hosts: Vec<String>,
    /// `https` (default) and/or `http`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schemes: Vec<String>,
    /// Deprecated: only 80/443, ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<u16>,
    /// HTTP methods (default GET, POST, PUT, PATCH, DELETE).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// Path patterns (default `/*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// One header of `customHeaders` auth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomHeaderEntry {
    /// Header name.
    pub name: String,
    /// Credential name.
    pub credential: String,
}

/// A placeholder replaced by a credential's value on some request surfaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialSubstitution {
    /// Credential name.
    pub credential: String,
    /// Literal, case-sensitive placeholder.
    pub placeholder: String,
    /// `path`, `query`, `header`, `body`.
    #[serde(rename = "in")]
    pub surfaces: Vec<String>,
}

/// How a binding authenticates: `bearer`, `basic`, `apiKey`, `customHeaders`,
/// `passthrough` (fields of other types stay `None`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CredentialAuth {
    /// The type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Credential name (`bearer`, `basic`, `apiKey`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// Header name (`apiKey`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Headers (`customHeaders`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Vec<CustomHeaderEntry>>,
    /// Substitutions (every type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub substitutions: Option<Vec<CredentialSubstitution>>,
}

/// A binding: which requests get which credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialBinding {
    /// Name.
    pub name: String,
    /// Request match.
    #[serde(rename = "match")]
    pub matcher: CredentialMatch,
    /// Auth rule.
    pub auth: CredentialAuth,
}

/// `add` / `replace` / `delete` of one kind of item, applied atomically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(serialize = "T: Serialize", deserialize = "T: Deserialize<'de>"))]
pub struct MutationSet<T> {
    /// New items.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<T>,
    /// Replaced items (by name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replace: Vec<T>,
    /// Names to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete: Vec<String>,
}

impl<T> Default for MutationSet<T> {
    fn default() -> Self {
        MutationSet {
            add: Vec::new(),
            replace: Vec::new(),
            delete: Vec::new(),
        }
    }
}

/// Body of `PATCH /credential-vault`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialVaultPatch {
    /// Optimistic guard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<i64>,
    /// Credential changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<MutationSet<Credential>>,
    /// Binding changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bindings: Option<MutationSet<CredentialBinding>>,
}

/// A credential without its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialMetadata {
    /// Name.
    pub name: String,
    /// `inline`.
    #[serde(default)]
    pub source_type: String,
    /// Revision that last wrote it.
    #[serde(default)]
    pub revision: i64,
}

/// Auth of a binding without secrets.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CredentialAuthMetadata {
    /// The type.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Header name (`apiKey`).
    #[serde(default)]
    pub name: Option<String>,
}

/// A binding as the vault reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialBindingMetadata {
    /// Name.
    pub name: String,
    /// Vault revision.
    #[serde(default)]
    pub revision: i64,
    /// Normalised match.
    #[serde(default, rename = "match")]
    pub matcher: Option<CredentialMatch>,
    /// Auth type (and header name).
    #[serde(default)]
    pub auth: Option<CredentialAuthMetadata>,
}

/// The vault without secrets.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CredentialVaultState {
    /// Revision (1 after create, +1 per patch).
    #[serde(default)]
    pub revision: i64,
    /// Credentials.
    #[serde(default)]
    pub credentials: Vec<CredentialMetadata>,
    /// Bindings.
    #[serde(default)]
    pub bindings: Vec<CredentialBindingMetadata>,
}

/// `GET /credential-vault/credentials`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CredentialList {
    /// Revision.
    #[serde(default)]
    pub revision: i64,
    /// Credentials.
    #[serde(default)]
    pub credentials: Vec<CredentialMetadata>,
}

/// `GET /credential-vault/bindings`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CredentialBindingList {
    /// Revision.
    #[serde(default)]
    pub revision: i64,
    /// Bindings.
    #[serde(default)]
    pub bindings: Vec<CredentialBindingMetadata>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug_and_match_keeps_its_name() {
        let c = Credential {
            name: "gh".into(),
            source: InlineCredentialSource {
                kind: "inline".into(),
                value: "TOPSECRET".into(),
            },
        };
        assert!(!format!("{c:?}").contains("TOPSECRET"));
        let b: CredentialBindingMetadata = serde_json::from_value(serde_json::json!({
            "name": "b", "revision": 2, "match": {"hosts": ["a.example.com"], "schemes": ["https"]},
            "auth": {"type": "apiKey", "name": "X-Key"}
        }))
        .unwrap();
        assert_eq!(b.matcher.unwrap().hosts, vec!["a.example.com"]);
        assert_eq!(b.auth.unwrap().name.as_deref(), Some("X-Key"));
    }
}
