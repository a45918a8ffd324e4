//! (1.1) `manager.*_template`: the template routes (the official SDKs'
//! `SandboxManager.create_template`, `get_template`, `list_templates`,
//! `delete_template`). Templates are created from with `sandbox.create` +
//! `template_id`.

use std::collections::BTreeMap;

use opensandbox_core::models::{
    CreateTemplateRequest, TemplateFilter, TemplateInfo, TemplateReadiness,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::args::{null_default, ConnectionRef, Managed};
use crate::convert;
use crate::error::OpResult;
use crate::session::Session;

/// `readiness` of `manager.create_template`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadinessArgs {
    #[serde(default)]
    pub probe: Option<String>,
    #[serde(default)]
    pub warmup_seconds: Option<u64>,
}

/// `manager.create_template`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateTemplateArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub image: String,
    pub publish: String,
    #[serde(default, deserialize_with = "null_default")]
    pub resource_limits: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_default")]
    pub entrypoint: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub env: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub readiness: Option<ReadinessArgs>,
    /// `native` or `overlaybd`.
    #[serde(default)]
    pub format: Option<String>,
}

/// `manager.get_template` / `manager.delete_template`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateIdArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub template_id: String,
}

/// `manager.list_templates`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListTemplatesArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub page: Option<u32>,
    #[serde(default)]
    pub page_size: Option<u32>,
}

macro_rules! managed {
    ($($t:ty),*) => {$(
        impl Managed for $t {
            fn connection(&self) -> Option<&ConnectionRef> { self.connection.as_ref() }
            fn manager(&self) -> Option<u64> { self.manager }
        }
    )*};
}
managed!(CreateTemplateArgs, TemplateIdArgs, ListTemplatesArgs);

/// TemplateInfo: snake_case, RFC 3339 times, absent optionals as null.
pub fn template_info(t: &TemplateInfo) -> Value {
    json!({
        "template_id": t.template_id,
        "image": t.image,
        "publish": t.publish,
        "format": t.format,
        "status": {
            "phase": t.status.phase,
            "manifest_ref": t.status.manifest_ref,
            "message": t.status.message,
        },
        "created_at": t.created_at.map(|x| x.to_rfc3339()),
        "updated_at": t.updated_at.map(|x| x.to_rfc3339()),
        "resource_limits": t.resource_limits,
        "entrypoint": t.entrypoint,
        "env": t.env,
        "metadata": t.metadata,
        "readiness": t.readiness.as_ref().map(|r| json!({
            "probe": r.probe, "warmup_seconds": r.warmup_seconds,
        })),
    })
}

/// `manager.create_template` → TemplateInfo (phase `Pending`).
pub async fn create_template(s: &Session, a: CreateTemplateArgs) -> OpResult {
    let m = s.manager("manager.create_template", &a)?;
    let request = CreateTemplateRequest {
        image: a.image,
        publish: a.publish,
        resource_limits: a.resource_limits,
        entrypoint: a.entrypoint,
        env: a.env,
        metadata: a.metadata,
        readiness: a.readiness.map(|r| TemplateReadiness {
            probe: r.probe,
            warmup_seconds: r.warmup_seconds,
        }),
        format: a.format,
    };
    Ok(template_info(&m.create_template(&request).await?))
}

/// `manager.get_template` → TemplateInfo.
pub async fn get_template(s: &Session, a: TemplateIdArgs) -> OpResult {
    let m = s.manager("manager.get_template", &a)?;
    Ok(template_info(&m.get_template(&a.template_id).await?))
}

/// `manager.list_templates` → `{template_infos, pagination}`.
pub async fn list_templates(s: &Session, a: ListTemplatesArgs) -> OpResult {
    let m = s.manager("manager.list_templates", &a)?;
    let filter = TemplateFilter {
        metadata: a.metadata,
        page: a.page,
        page_size: a.page_size,
    };
    let page = m.list_templates(&filter).await?;
    Ok(json!({
        "template_infos": page.items.iter().map(template_info).collect::<Vec<_>>(),
        "pagination": convert::pagination(&page.pagination),
    }))
}

/// `manager.delete_template` → null.
pub async fn delete_template(s: &Session, a: TemplateIdArgs) -> OpResult {
    s.manager("manager.delete_template", &a)?
        .delete_template(&a.template_id)
        .await?;
    Ok(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse;

    #[test]
    fn create_template_args_are_checked() {
        let a: CreateTemplateArgs = parse(
            "manager.create_template",
            json!({"image": "python:3.11", "publish": "s3://b/p",
                   "env": {"A": "1"}, "readiness": {"probe": "cmd://true", "warmup_seconds": 5}}),
        )
        .unwrap();
        assert_eq!(a.readiness.unwrap().warmup_seconds, Some(5));
        for bad in [
            json!({"image": "x"}),
            json!({"image": "x", "publish": "p", "resourceLimits": {}}),
            json!({"image": "x", "publish": "p", "readiness": {"warmupSeconds": 1}}),
        ] {
            let e = parse::<CreateTemplateArgs>("manager.create_template", bad.clone())
                .err()
                .unwrap_or_else(|| panic!("accepted {bad}"));
            assert_eq!(e.kind, "invalid_argument");
        }
    }
}
