//! (1.1) `credential_vault.*`: a sandbox's credential vault (the official SDKs'
//! `sandbox.credential_vault` service: `create`, `get`, `patch`, `delete`,
//! `list_credentials`, `get_credential`, `list_bindings`, `get_binding`). Values are
//! write-only: results carry metadata.

use opensandbox_core::models::{
    Credential, CredentialAuth, CredentialBinding, CredentialBindingMetadata, CredentialMatch,
    CredentialMetadata, CredentialSubstitution, CredentialVaultPatch, CredentialVaultState,
    CustomHeaderEntry, InlineCredentialSource, MutationSet,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::args::{null_default, Bound, ConnectionRef, SandboxArgs, SandboxRef};
use crate::error::{OpError, OpResult};
use crate::session::Session;

/// `source` of a credential: `{type: "inline" (default), value}`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceArgs {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    pub value: String,
}

impl std::fmt::Debug for SourceArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceArgs")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// A credential: `{name, source}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialArgs {
    pub name: String,
    pub source: SourceArgs,
}

/// `match` of a binding.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchArgs {
    pub hosts: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub schemes: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub ports: Vec<u16>,
    #[serde(default, deserialize_with = "null_default")]
    pub methods: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub paths: Vec<String>,
}

/// One header of `customHeaders` auth.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderArgs {
    pub name: String,
    pub credential: String,
}

/// One substitution: `{credential, placeholder, in}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubstitutionArgs {
    pub credential: String,
    pub placeholder: String,
    #[serde(rename = "in")]
    pub surfaces: Vec<String>,
}

/// `auth` of a binding: `type` plus that type's fields (checked by the server).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthArgs {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub credential: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub headers: Option<Vec<HeaderArgs>>,
    #[serde(default)]
    pub substitutions: Option<Vec<SubstitutionArgs>>,
}

/// A binding: `{name, match, auth}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindingArgs {
    pub name: String,
    #[serde(rename = "match")]
    pub matcher: MatchArgs,
    pub auth: AuthArgs,
}

/// `credential_vault.create`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateVaultArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default, deserialize_with = "null_default")]
    pub credentials: Vec<CredentialArgs>,
    #[serde(default, deserialize_with = "null_default")]
    pub bindings: Vec<BindingArgs>,
}

/// `add` / `replace` / `delete` of `credential_vault.patch`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(bound = "T: Deserialize<'de>")]
pub struct MutationArgs<T> {
    #[serde(default = "Vec::new", deserialize_with = "null_default")]
    pub add: Vec<T>,
    #[serde(default = "Vec::new", deserialize_with = "null_default")]
    pub replace: Vec<T>,
    #[serde(default, deserialize_with = "null_default")]
    pub delete: Vec<String>,
}

/// `credential_vault.patch`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchVaultArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub expected_revision: Option<i64>,
    #[serde(default)]
    pub credentials: Option<MutationArgs<CredentialArgs>>,
    #[serde(default)]
    pub bindings: Option<MutationArgs<BindingArgs>>,
}

/// `credential_vault.get_credential` / `credential_vault.get_binding`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VaultItemArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub name: String,
}

macro_rules! bound {
    ($($t:ty),*) => {$(
        impl Bound for $t {
            fn sandbox(&self) -> &SandboxRef { &self.sandbox }
            fn connection(&self) -> Option<&ConnectionRef> { self.connection.as_ref() }
        }
    )*};
}
bound!(CreateVaultArgs, PatchVaultArgs, VaultItemArgs);

fn credential(c: CredentialArgs) -> Credential {
    Credential {
        name: c.name,
        source: InlineCredentialSource {
            kind: c.source.kind.unwrap_or_else(|| "inline".into()),
            value: c.source.value,
        },
    }
}

fn binding(b: BindingArgs) -> CredentialBinding {
    CredentialBinding {
        name: b.name,
        matcher: CredentialMatch {
            hosts: b.matcher.hosts,
            schemes: b.matcher.schemes,
            ports: b.matcher.ports,
            methods: b.matcher.methods,
            paths: b.matcher.paths,
        },
        auth: CredentialAuth {
            kind: b.auth.kind,
            credential: b.auth.credential,
            name: b.auth.name,
            headers: b.auth.headers.map(|hs| {
                hs.into_iter()
                    .map(|h| CustomHeaderEntry {
                        name: h.name,
                        credential: h.credential,
                    })
                    .collect()
            }),
            substitutions: b.auth.substitutions.map(|ss| {
                ss.into_iter()
                    .map(|s| CredentialSubstitution {
                        credential: s.credential,
                        placeholder: s.placeholder,
                        surfaces: s.surfaces,
                    })
                    .collect()
            }),
        },
    }
}

fn mutation<A, T>(m: MutationArgs<A>, f: fn(A) -> T) -> MutationSet<T> {
    MutationSet {
        add: m.add.into_iter().map(f).collect(),
        replace: m.replace.into_iter().map(f).collect(),
        delete: m.delete,
    }
}

fn credential_meta(c: &CredentialMetadata) -> Value {
    json!({"name": c.name, "source_type": c.source_type, "revision": c.revision})
}

fn binding_meta(b: &CredentialBindingMetadata) -> Value {
    json!({
        "name": b.name,
        "revision": b.revision,
        "match": b.matcher.as_ref().map(|m| json!({
            "hosts": m.hosts, "schemes": m.schemes, "methods": m.methods, "paths": m.paths,
        })),
        "auth": b.auth.as_ref().map(|a| json!({"type": a.kind, "name": a.name})),
    })
}

/// CredentialVaultState: `{revision, credentials, bindings}` (snake_case).
pub fn vault_state(v: &CredentialVaultState) -> Value {
    json!({
        "revision": v.revision,
        "credentials": v.credentials.iter().map(credential_meta).collect::<Vec<_>>(),
        "bindings": v.bindings.iter().map(binding_meta).collect::<Vec<_>>(),
    })
}

/// `credential_vault.create` → CredentialVaultState.
pub async fn create(s: &Session, a: CreateVaultArgs) -> OpResult {
    let sb = s.sandbox("credential_vault.create", &a).await?;
    let credentials: Vec<Credential> = a.credentials.into_iter().map(credential).collect();
    let bindings: Vec<CredentialBinding> = a.bindings.into_iter().map(binding).collect();
    let state = sb
        .credential_vault()
        .await?
        .create_credential_vault(&credentials, &bindings)
        .await?;
    Ok(vault_state(&state))
}

/// `credential_vault.get` → CredentialVaultState.
pub async fn get(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("credential_vault.get", &a).await?;
    Ok(vault_state(
        &sb.credential_vault().await?.get_credential_vault().await?,
    ))
}

/// `credential_vault.patch` → CredentialVaultState.
pub async fn patch(s: &Session, a: PatchVaultArgs) -> OpResult {
    const OP: &str = "credential_vault.patch";
    if a.credentials.is_none() && a.bindings.is_none() {
        return Err(OpError::invalid(
            OP,
            format!("{OP}: give `credentials` or `bindings` (or both)"),
        ));
    }
    let sb = s.sandbox(OP, &a).await?;
    let patch = CredentialVaultPatch {
        expected_revision: a.expected_revision,
        credentials: a.credentials.map(|m| mutation(m, credential)),
        bindings: a.bindings.map(|m| mutation(m, binding)),
    };
    Ok(vault_state(
        &sb.credential_vault()
            .await?
            .patch_credential_vault(&patch)
            .await?,
    ))
}

/// `credential_vault.delete` → null.
pub async fn delete(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("credential_vault.delete", &a).await?;
    sb.credential_vault()
        .await?
        .delete_credential_vault()
        .await?;
    Ok(Value::Null)
}

/// `credential_vault.list_credentials` → `[CredentialMetadata]`.
pub async fn list_credentials(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("credential_vault.list_credentials", &a).await?;
    let list = sb
        .credential_vault()
        .await?
        .list_vault_credentials()
        .await?;
    Ok(Value::Array(list.iter().map(credential_meta).collect()))
}

/// `credential_vault.get_credential` → CredentialMetadata.
pub async fn get_credential(s: &Session, a: VaultItemArgs) -> OpResult {
    let sb = s.sandbox("credential_vault.get_credential", &a).await?;
    Ok(credential_meta(
        &sb.credential_vault()
            .await?
            .get_vault_credential(&a.name)
            .await?,
    ))
}

/// `credential_vault.list_bindings` → `[CredentialBindingMetadata]`.
pub async fn list_bindings(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("credential_vault.list_bindings", &a).await?;
    let list = sb.credential_vault().await?.list_vault_bindings().await?;
    Ok(Value::Array(list.iter().map(binding_meta).collect()))
}

/// `credential_vault.get_binding` → CredentialBindingMetadata.
pub async fn get_binding(s: &Session, a: VaultItemArgs) -> OpResult {
    let sb = s.sandbox("credential_vault.get_binding", &a).await?;
    Ok(binding_meta(
        &sb.credential_vault()
            .await?
            .get_vault_binding(&a.name)
            .await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse;

    #[test]
    fn vault_args_map_to_the_core_models() {
        let a: CreateVaultArgs = parse(
            "credential_vault.create",
            json!({"sandbox": "s", "credentials": [{"name": "t", "source": {"value": "v"}}],
                   "bindings": [{"name": "b", "match": {"hosts": ["a.example.com"]},
                     "auth": {"type": "passthrough", "substitutions": [
                        {"credential": "t", "placeholder": "P", "in": ["query"]}]}}]}),
        )
        .unwrap();
        let c = credential(a.credentials[0].clone());
        assert_eq!(c.source.kind, "inline");
        assert!(!format!("{:?}", a.credentials[0]).contains("\"v\""));
        let b = binding(a.bindings[0].clone());
        let wire = serde_json::to_value(&b).unwrap();
        assert_eq!(wire["auth"]["substitutions"][0]["in"][0], "query");
        assert_eq!(wire["match"]["hosts"][0], "a.example.com");
        assert!(wire["auth"].get("credential").is_none());
        let e = parse::<PatchVaultArgs>(
            "credential_vault.patch",
            json!({"sandbox": "s", "expectedRevision": 1}),
        )
        .err()
        .unwrap();
        assert!(e.message.contains("expectedRevision"));
    }
}
