//! (1.1) The template routes of the lifecycle API (`/templates`, protocol.md §2.8) on
//! [`SandboxManager`], the official SDKs' manager calls.

use reqwest::Method;

use crate::error::{Error, Result};
use crate::lifecycle::{require_id, seg, SandboxManager};
use crate::models::{CreateTemplateRequest, PagedTemplateInfos, TemplateFilter, TemplateInfo};

impl SandboxManager {
    /// `POST /templates`: declares a build (phase `Pending`); poll
    /// [`SandboxManager::get_template`] until `Succeeded` or `Failed`.
    pub async fn create_template(&self, request: &CreateTemplateRequest) -> Result<TemplateInfo> {
        const OP: &str = "create_template";
        if request.image.trim().is_empty() || request.publish.trim().is_empty() {
            return Err(Error::invalid_argument(
                OP,
                "template image and publish target cannot be blank",
            ));
        }
        let req = self.req(OP, Method::POST, "/templates").json(request)?;
        self.http().json(req).await
    }

    /// `GET /templates/{id}`.
    pub async fn get_template(&self, template_id: &str) -> Result<TemplateInfo> {
        const OP: &str = "get_template";
        require_id(OP, "template id", template_id)?;
        let req = self.req(OP, Method::GET, &format!("/templates/{}", seg(template_id)));
        self.http().json(req).await
    }

    /// `GET /templates` with filters.
    pub async fn list_templates(&self, filter: &TemplateFilter) -> Result<PagedTemplateInfos> {
        const OP: &str = "list_templates";
        if filter.page == Some(0) || filter.page_size == Some(0) {
            return Err(Error::invalid_argument(OP, "page and page size start at 1"));
        }
        let mut req = self.req(OP, Method::GET, "/templates");
        if !filter.metadata.is_empty() {
            // One parameter holding a query string, like the sandbox list (§2.4).
            let inner = filter
                .metadata
                .iter()
                .map(|(k, v)| format!("{}={}", seg(k), seg(v)))
                .collect::<Vec<_>>()
                .join("&");
            req = req.query("metadata", inner);
        }
        if let Some(p) = filter.page {
            req = req.query("page", p);
        }
        if let Some(p) = filter.page_size {
            req = req.query("pageSize", p);
        }
        self.http().json(req).await
    }

    /// `DELETE /templates/{id}` (sandboxes of the template keep running).
    pub async fn delete_template(&self, template_id: &str) -> Result<()> {
        const OP: &str = "delete_template";
        require_id(OP, "template id", template_id)?;
        let req = self.req(
            OP,
            Method::DELETE,
            &format!("/templates/{}", seg(template_id)),
        );
        self.http().empty(req).await
    }
}
