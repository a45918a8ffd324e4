//! (1.1) The credential vault of one sandbox (`/credential-vault...` on its egress
//! endpoint, protocol.md §5.2) on [`EgressClient`], the official SDKs'
//! `credential_vault` service. Values are write-only: the vault answers metadata.

use reqwest::Method;

use crate::egress::EgressClient;
use crate::error::{Error, Result};
use crate::lifecycle::{require_id, seg};
use crate::models::{
    Credential, CredentialBinding, CredentialBindingList, CredentialBindingMetadata,
    CredentialList, CredentialMetadata, CredentialVaultPatch, CredentialVaultState,
};

impl EgressClient {
    /// `POST /credential-vault`: the first revision.
    pub async fn create_credential_vault(
        &self,
        credentials: &[Credential],
        bindings: &[CredentialBinding],
    ) -> Result<CredentialVaultState> {
        const OP: &str = "credential_vault.create";
        let body = serde_json::json!({"credentials": credentials, "bindings": bindings});
        let req = self
            .path_req(OP, Method::POST, "/credential-vault")
            .json(&body)?;
        self.http().json(req).await
    }

    /// `GET /credential-vault`.
    pub async fn get_credential_vault(&self) -> Result<CredentialVaultState> {
        let req = self.path_req("credential_vault.get", Method::GET, "/credential-vault");
        self.http().json(req).await
    }

    /// `PATCH /credential-vault`: one atomic mutation (`expected_revision` guards it).
    pub async fn patch_credential_vault(
        &self,
        patch: &CredentialVaultPatch,
    ) -> Result<CredentialVaultState> {
        const OP: &str = "credential_vault.patch";
        if patch.credentials.is_none() && patch.bindings.is_none() {
            return Err(Error::invalid_argument(
                OP,
                "a patch needs credentials or bindings",
            ));
        }
        let req = self
            .path_req(OP, Method::PATCH, "/credential-vault")
            .json(patch)?;
        self.http().json(req).await
    }

    /// `DELETE /credential-vault`.
    pub async fn delete_credential_vault(&self) -> Result<()> {
        let req = self.path_req(
            "credential_vault.delete",
            Method::DELETE,
            "/credential-vault",
        );
        self.http().empty(req).await
    }

    /// `GET /credential-vault/credentials`.
    pub async fn list_vault_credentials(&self) -> Result<Vec<CredentialMetadata>> {
        let req = self.path_req(
            "credential_vault.list_credentials",
            Method::GET,
            "/credential-vault/credentials",
        );
        let list: CredentialList = self.http().json(req).await?;
        Ok(list.credentials)
    }

    /// `GET /credential-vault/credentials/{name}`.
    pub async fn get_vault_credential(&self, name: &str) -> Result<CredentialMetadata> {
        const OP: &str = "credential_vault.get_credential";
        require_id(OP, "credential name", name)?;
        let path = format!("/credential-vault/credentials/{}", seg(name));
        self.http()
            .json(self.path_req(OP, Method::GET, &path))
            .await
    }

    /// `GET /credential-vault/bindings`.
    pub async fn list_vault_bindings(&self) -> Result<Vec<CredentialBindingMetadata>> {
        let req = self.path_req(
            "credential_vault.list_bindings",
            Method::GET,
            "/credential-vault/bindings",
        );
        let list: CredentialBindingList = self.http().json(req).await?;
        Ok(list.bindings)
    }

    /// `GET /credential-vault/bindings/{name}`.
    pub async fn get_vault_binding(&self, name: &str) -> Result<CredentialBindingMetadata> {
        const OP: &str = "credential_vault.get_binding";
        require_id(OP, "binding name", name)?;
        let path = format!("/credential-vault/bindings/{}", seg(name));
        self.http()
            .json(self.path_req(OP, Method::GET, &path))
            .await
    }
}
