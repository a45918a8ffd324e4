package opensandbox

import (
	"context"
	"sync"
)

// egressAuthHeader carries the egress sidecar's token.
const egressAuthHeader = "OPENSANDBOX-EGRESS-AUTH"

// EgressClient is the official low-level client of one sandbox's egress sidecar
// (network policy, credential vault). Like ExecdClient it talks to the given URL
// directly: the core opens a handle whose egress endpoint is that URL
// (`sandbox.open_endpoints`; its execd slot points at the same URL and is never used
// by this client).
type EgressClient struct {
	*Client

	once sync.Once
	sb   *Sandbox
	err  error
}

// NewEgressClient creates an EgressClient for a sidecar URL (e.g.
// "http://localhost:18080") and token ("" when the sidecar needs none).
func NewEgressClient(baseURL, authToken string, opts ...Option) *EgressClient {
	return &EgressClient{Client: NewClient(baseURL, authToken, egressAuthHeader, opts...)}
}

func (c *EgressClient) sandbox() (*Sandbox, error) {
	c.once.Do(func() { c.sb, c.err = openDirect(c.Client, true) })
	return c.sb, c.err
}

// Close frees the native handle of the client.
func (c *EgressClient) Close() error {
	if sb, _ := c.sandbox(); sb != nil {
		return sb.Close()
	}
	return nil
}

// GetPolicy returns the enforced policy and the sidecar's mode.
func (c *EgressClient) GetPolicy(ctx context.Context) (*PolicyStatusResponse, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	var out PolicyStatusResponse
	if err := sb.opW(ctx, "sandbox.get_egress_status", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchPolicy merges rules into the policy.
func (c *EgressClient) PatchPolicy(ctx context.Context, rules []NetworkRule) (*PolicyStatusResponse, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.PatchEgressRules(ctx, rules)
}

// DeletePolicy removes the rules of the given targets (unknown targets are ignored).
func (c *EgressClient) DeletePolicy(ctx context.Context, targets []string) (*PolicyStatusResponse, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.DeleteEgressRules(ctx, targets)
}

// CreateCredentialVault creates the vault.
func (c *EgressClient) CreateCredentialVault(ctx context.Context, req CredentialVaultCreateRequest) (*CredentialVaultState, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.CreateCredentialVault(ctx, req)
}

// GetCredentialVault returns the vault's sanitized state.
func (c *EgressClient) GetCredentialVault(ctx context.Context) (*CredentialVaultState, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.GetCredentialVault(ctx)
}

// PatchCredentialVault mutates the vault atomically.
func (c *EgressClient) PatchCredentialVault(ctx context.Context, req CredentialVaultPatchRequest) (*CredentialVaultState, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.PatchCredentialVault(ctx, req)
}

// DeleteCredentialVault deletes the vault.
func (c *EgressClient) DeleteCredentialVault(ctx context.Context) error {
	sb, err := c.sandbox()
	if err != nil {
		return err
	}
	return sb.DeleteCredentialVault(ctx)
}

// ListCredentialVaultCredentials lists sanitized credentials.
func (c *EgressClient) ListCredentialVaultCredentials(ctx context.Context) (*CredentialListResponse, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.ListCredentialVaultCredentials(ctx)
}

// GetCredentialVaultCredential returns one sanitized credential.
func (c *EgressClient) GetCredentialVaultCredential(ctx context.Context, name string) (*CredentialMetadata, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.GetCredentialVaultCredential(ctx, name)
}

// ListCredentialVaultBindings lists sanitized bindings.
func (c *EgressClient) ListCredentialVaultBindings(ctx context.Context) (*CredentialBindingListResponse, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.ListCredentialVaultBindings(ctx)
}

// GetCredentialVaultBinding returns one sanitized binding.
func (c *EgressClient) GetCredentialVaultBinding(ctx context.Context, name string) (*CredentialBindingMetadata, error) {
	sb, err := c.sandbox()
	if err != nil {
		return nil, err
	}
	return sb.GetCredentialVaultBinding(ctx, name)
}
