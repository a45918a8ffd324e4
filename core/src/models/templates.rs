//! (1.1) Template models (`/templates`, protocol.md §2.8).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::lifecycle::PaginationInfo;

/// Build-side readiness gate of a template.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateReadiness {
    /// `cmd://COMMAND` or `tcp://HOST:PORT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    /// Warm-up window in seconds when there is no probe (server default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_seconds: Option<u64>,
}

/// Body of `POST /templates`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTemplateRequest {
    /// Source image reference.
    pub image: String,
    /// Publish target (S3 upstream).
    pub publish: String,
    /// Sizing: `cpu`, `memory`, `disk`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_limits: BTreeMap<String, String>,
    /// Entry process; empty = the server default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entrypoint: Vec<String>,
    /// Environment baked into the template.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Readiness gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness: Option<TemplateReadiness>,
    /// `native` or `overlaybd` (server default `overlaybd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
}

/// Build status of a template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateStatus {
    /// `Pending`, `Building`, `Succeeded`, `Failed` (open set).
    pub phase: String,
    /// What the build produced (when `Succeeded`).
    #[serde(default)]
    pub manifest_ref: Option<String>,
    /// Why the build failed.
    #[serde(default)]
    pub message: Option<String>,
}

/// A template (`FsbTemplate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateInfo {
    /// `tpl_<uuid>`.
    pub template_id: String,
    /// Source image.
    #[serde(default)]
    pub image: String,
    /// Publish target.
    #[serde(default)]
    pub publish: String,
    /// Storage format.
    #[serde(default)]
    pub format: String,
    /// Build status.
    pub status: TemplateStatus,
    /// Creation time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub created_at: Option<DateTime<Utc>>,
    /// Last update.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub updated_at: Option<DateTime<Utc>>,
    /// Sizing.
    #[serde(default)]
    pub resource_limits: Option<BTreeMap<String, String>>,
    /// Entry process.
    #[serde(default)]
    pub entrypoint: Option<Vec<String>>,
    /// Baked environment.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Metadata.
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Readiness gate.
    #[serde(default)]
    pub readiness: Option<TemplateReadiness>,
}

/// One page of templates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PagedTemplateInfos {
    /// Templates.
    #[serde(default)]
    pub items: Vec<TemplateInfo>,
    /// Pagination.
    #[serde(default)]
    pub pagination: PaginationInfo,
}

/// Filter of `GET /templates`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TemplateFilter {
    /// Metadata equality filters, ANDed.
    pub metadata: BTreeMap<String, String>,
    /// 1-based page.
    pub page: Option<u32>,
    /// Page size.
    pub page_size: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_info_reads_the_wire_and_request_omits_empties() {
        let t: TemplateInfo = serde_json::from_value(serde_json::json!({
            "templateId": "tpl_1", "image": "python:3.11", "publish": "s3://b/p",
            "format": "overlaybd", "status": {"phase": "Succeeded", "manifestRef": "m"},
            "createdAt": "2026-12-02T10:00:00Z", "updatedAt": "2026-12-02T10:00:01.5Z",
            "readiness": {"probe": "cmd://true", "warmupSeconds": 5}, "future": 1
        }))
        .unwrap();
        assert_eq!(t.status.manifest_ref.as_deref(), Some("m"));
        assert_eq!(t.readiness.unwrap().warmup_seconds, Some(5));
        let req = CreateTemplateRequest {
            image: "i".into(),
            publish: "p".into(),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&req).unwrap(),
            serde_json::json!({"image": "i", "publish": "p"})
        );
    }
}
