package opensandbox

import (
	"context"
	"encoding/json"
)

// Credential Vault: outbound credentials injected by the egress sidecar (ops
// `credential_vault.*` of bindings/common). Values are write-only: every result is
// sanitized metadata.

// CredentialSourceType is the credential source discriminator.
type CredentialSourceType string

// CredentialSourceInline carries write-only inline credential material.
const CredentialSourceInline CredentialSourceType = "inline"

// InlineCredentialSource is write-only credential material.
type InlineCredentialSource struct {
	Type  CredentialSourceType `json:"type"`
	Value string               `json:"value"`
}

// MarshalJSON defaults Type to inline, so InlineCredentialSource{Value: v} works.
func (s InlineCredentialSource) MarshalJSON() ([]byte, error) {
	type plain InlineCredentialSource
	p := plain(s)
	if p.Type == "" {
		p.Type = CredentialSourceInline
	}
	return json.Marshal(p)
}

// Credential is a named credential to create or replace.
type Credential struct {
	Name   string                 `json:"name"`
	Source InlineCredentialSource `json:"source"`
}

// CredentialScheme is a request scheme a binding matches.
type CredentialScheme string

// Credential schemes.
const (
	CredentialSchemeHTTPS CredentialScheme = "https"
	CredentialSchemeHTTP  CredentialScheme = "http"
)

// CredentialMatch selects the outbound requests a binding applies to.
type CredentialMatch struct {
	Schemes []CredentialScheme `json:"schemes,omitempty"`
	// Deprecated: ignored by the sidecar (the port follows the scheme).
	Ports   []int    `json:"ports,omitempty"`
	Hosts   []string `json:"hosts"`
	Methods []string `json:"methods,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// CustomHeaderEntry injects one credential as one header.
type CustomHeaderEntry struct {
	Name       string `json:"name"`
	Credential string `json:"credential"`
}

// CredentialSubstitutionSurface is where a placeholder may be replaced.
type CredentialSubstitutionSurface string

// Substitution surfaces.
const (
	CredentialSubstitutionPath   CredentialSubstitutionSurface = "path"
	CredentialSubstitutionQuery  CredentialSubstitutionSurface = "query"
	CredentialSubstitutionHeader CredentialSubstitutionSurface = "header"
	CredentialSubstitutionBody   CredentialSubstitutionSurface = "body"
)

// CredentialSubstitution replaces a literal placeholder with a credential.
type CredentialSubstitution struct {
	Credential  string                          `json:"credential"`
	Placeholder string                          `json:"placeholder"`
	In          []CredentialSubstitutionSurface `json:"in"`
}

// CredentialAuthType is how a binding injects its credential.
type CredentialAuthType string

// Auth types.
const (
	CredentialAuthBearer        CredentialAuthType = "bearer"
	CredentialAuthBasic         CredentialAuthType = "basic"
	CredentialAuthAPIKey        CredentialAuthType = "apiKey"
	CredentialAuthCustomHeaders CredentialAuthType = "customHeaders"
	CredentialAuthPassthrough   CredentialAuthType = "passthrough"
)

// CredentialAuth configures the injection of a binding.
type CredentialAuth struct {
	Type          CredentialAuthType       `json:"type"`
	Credential    string                   `json:"credential,omitempty"`
	Name          string                   `json:"name,omitempty"`
	Headers       []CustomHeaderEntry      `json:"headers,omitempty"`
	Substitutions []CredentialSubstitution `json:"substitutions,omitempty"`
}

// CredentialBinding ties a credential to matching requests.
type CredentialBinding struct {
	Name  string          `json:"name"`
	Match CredentialMatch `json:"match"`
	Auth  CredentialAuth  `json:"auth"`
}

// CredentialVaultCreateRequest is the first revision of a vault.
type CredentialVaultCreateRequest struct {
	Credentials []Credential        `json:"credentials"`
	Bindings    []CredentialBinding `json:"bindings"`
}

// CredentialMutationSet is an atomic set of credential changes.
type CredentialMutationSet struct {
	Add     []Credential `json:"add,omitempty"`
	Replace []Credential `json:"replace,omitempty"`
	Delete  []string     `json:"delete,omitempty"`
}

// CredentialBindingMutationSet is an atomic set of binding changes.
type CredentialBindingMutationSet struct {
	Add     []CredentialBinding `json:"add,omitempty"`
	Replace []CredentialBinding `json:"replace,omitempty"`
	Delete  []string            `json:"delete,omitempty"`
}

// CredentialVaultPatchRequest mutates a vault atomically; ExpectedRevision, when set,
// is an optimistic-concurrency guard.
type CredentialVaultPatchRequest struct {
	ExpectedRevision *int                          `json:"expectedRevision,omitempty"`
	Credentials      *CredentialMutationSet        `json:"credentials,omitempty"`
	Bindings         *CredentialBindingMutationSet `json:"bindings,omitempty"`
}

// CredentialMetadata is a sanitized credential (no value).
type CredentialMetadata struct {
	Name       string `json:"name"`
	SourceType string `json:"sourceType"`
	Revision   int    `json:"revision"`
}

// CredentialAuthMetadata is sanitized auth metadata (no credential references).
type CredentialAuthMetadata struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

// CredentialBindingMetadata is a sanitized binding.
type CredentialBindingMetadata struct {
	Name     string                  `json:"name"`
	Revision int                     `json:"revision"`
	Match    *CredentialMatch        `json:"match,omitempty"`
	Auth     *CredentialAuthMetadata `json:"auth,omitempty"`
}

// CredentialVaultState is a vault's sanitized state.
type CredentialVaultState struct {
	Revision    int                         `json:"revision"`
	Credentials []CredentialMetadata        `json:"credentials"`
	Bindings    []CredentialBindingMetadata `json:"bindings"`
}

// CredentialListResponse is the credential list with the vault revision.
type CredentialListResponse struct {
	Revision    int                  `json:"revision"`
	Credentials []CredentialMetadata `json:"credentials"`
}

// CredentialBindingListResponse is the binding list with the vault revision.
type CredentialBindingListResponse struct {
	Revision int                         `json:"revision"`
	Bindings []CredentialBindingMetadata `json:"bindings"`
}

func vaultArgs(req any) map[string]any {
	args, _ := wireArg(req).(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	return args
}

// CreateCredentialVault creates the sandbox's vault (the sandbox needs
// CredentialProxy enabled).
func (s *Sandbox) CreateCredentialVault(ctx context.Context, req CredentialVaultCreateRequest) (*CredentialVaultState, error) {
	var out CredentialVaultState
	if err := s.opW(ctx, "credential_vault.create", vaultArgs(req), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetCredentialVault returns the vault's sanitized state.
func (s *Sandbox) GetCredentialVault(ctx context.Context) (*CredentialVaultState, error) {
	var out CredentialVaultState
	if err := s.opW(ctx, "credential_vault.get", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchCredentialVault mutates credentials and bindings atomically.
func (s *Sandbox) PatchCredentialVault(ctx context.Context, req CredentialVaultPatchRequest) (*CredentialVaultState, error) {
	var out CredentialVaultState
	if err := s.opW(ctx, "credential_vault.patch", vaultArgs(req), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteCredentialVault deletes the vault.
func (s *Sandbox) DeleteCredentialVault(ctx context.Context) error {
	return s.op(ctx, "credential_vault.delete", nil, nil)
}

// ListCredentialVaultCredentials lists the sanitized credentials with the vault
// revision. The list and the revision come from one read of the vault state
// (credential_vault.get), so they are consistent with each other.
func (s *Sandbox) ListCredentialVaultCredentials(ctx context.Context) (*CredentialListResponse, error) {
	st, err := s.GetCredentialVault(ctx)
	if err != nil {
		return nil, err
	}
	return &CredentialListResponse{Revision: st.Revision, Credentials: st.Credentials}, nil
}

// GetCredentialVaultCredential returns one sanitized credential.
func (s *Sandbox) GetCredentialVaultCredential(ctx context.Context, name string) (*CredentialMetadata, error) {
	var out CredentialMetadata
	if err := s.opW(ctx, "credential_vault.get_credential", map[string]any{"name": name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListCredentialVaultBindings lists the sanitized bindings with the vault revision
// (one read of the vault state, as ListCredentialVaultCredentials).
func (s *Sandbox) ListCredentialVaultBindings(ctx context.Context) (*CredentialBindingListResponse, error) {
	st, err := s.GetCredentialVault(ctx)
	if err != nil {
		return nil, err
	}
	return &CredentialBindingListResponse{Revision: st.Revision, Bindings: st.Bindings}, nil
}

// GetCredentialVaultBinding returns one sanitized binding.
func (s *Sandbox) GetCredentialVaultBinding(ctx context.Context, name string) (*CredentialBindingMetadata, error) {
	var out CredentialBindingMetadata
	if err := s.opW(ctx, "credential_vault.get_binding", map[string]any{"name": name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
