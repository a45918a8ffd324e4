package opensandbox

import (
	"context"
	"time"
)

// TemplatePhase is the phase of a template build (new phases may appear).
type TemplatePhase string

// Template phases.
const (
	TemplatePhasePending   TemplatePhase = "Pending"
	TemplatePhaseBuilding  TemplatePhase = "Building"
	TemplatePhaseSucceeded TemplatePhase = "Succeeded"
	TemplatePhaseFailed    TemplatePhase = "Failed"
)

// TemplateFormat is the storage encoding of a template's snapshots.
type TemplateFormat string

// Template formats.
const (
	TemplateFormatNative    TemplateFormat = "native"
	TemplateFormatOverlayBD TemplateFormat = "overlaybd"
)

// TemplateReadiness is the build-side readiness gate of a template.
type TemplateReadiness struct {
	// Probe, e.g. "tcp://127.0.0.1:44772" or "cmd://<command>".
	Probe string `json:"probe,omitempty"`
	// WarmupSeconds is the fallback warm-up window (server default 60).
	WarmupSeconds *int `json:"warmupSeconds,omitempty"`
}

// TemplateStatus is the build status of a template.
type TemplateStatus struct {
	Phase       TemplatePhase `json:"phase"`
	ManifestRef string        `json:"manifestRef,omitempty"`
	Message     string        `json:"message,omitempty"`
}

// CreateTemplateRequest declares a template (a golden-image build, asynchronous:
// poll GetTemplate until the phase is Succeeded or Failed).
type CreateTemplateRequest struct {
	Image          string             `json:"image"`
	Publish        string             `json:"publish"`
	ResourceLimits ResourceLimits     `json:"resourceLimits,omitempty"`
	Entrypoint     []string           `json:"entrypoint,omitempty"`
	Metadata       map[string]string  `json:"metadata,omitempty"`
	Readiness      *TemplateReadiness `json:"readiness,omitempty"`
	Format         TemplateFormat     `json:"format,omitempty"`
	// Env of the template's guest (an extension: the lifecycle API and the Python
	// SDK have it, the official Go SDK does not).
	Env map[string]string `json:"env,omitempty"`
}

// TemplateInfo is a template and its latest build status.
type TemplateInfo struct {
	TemplateID     string             `json:"templateId"`
	Image          string             `json:"image"`
	Publish        string             `json:"publish"`
	Format         TemplateFormat     `json:"format"`
	Status         TemplateStatus     `json:"status"`
	CreatedAt      time.Time          `json:"createdAt"`
	UpdatedAt      time.Time          `json:"updatedAt"`
	ResourceLimits ResourceLimits     `json:"resourceLimits,omitempty"`
	Entrypoint     []string           `json:"entrypoint,omitempty"`
	Metadata       map[string]string  `json:"metadata,omitempty"`
	Readiness      *TemplateReadiness `json:"readiness,omitempty"`
	// Env is an extension, as in CreateTemplateRequest.
	Env map[string]string `json:"env,omitempty"`
}

// ListTemplatesOptions filters ListTemplates.
type ListTemplatesOptions struct {
	Metadata map[string]string
	Page     int
	PageSize int
}

// ListTemplatesResponse is one page of templates.
type ListTemplatesResponse struct {
	Items      []TemplateInfo `json:"items" wire:"template_infos"`
	Pagination PaginationInfo `json:"pagination"`
}

// CreateTemplate declares a template (manager.create_template).
func (m *SandboxManager) CreateTemplate(ctx context.Context, req CreateTemplateRequest) (*TemplateInfo, error) {
	var out TemplateInfo
	if err := m.call(ctx, "create_template", templateArgs(req), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func templateArgs(req CreateTemplateRequest) map[string]any {
	args := map[string]any{"image": req.Image, "publish": req.Publish}
	if len(req.ResourceLimits) > 0 {
		args["resource_limits"] = req.ResourceLimits
	}
	if len(req.Entrypoint) > 0 {
		args["entrypoint"] = req.Entrypoint
	}
	if len(req.Metadata) > 0 {
		args["metadata"] = req.Metadata
	}
	if len(req.Env) > 0 {
		args["env"] = req.Env
	}
	if req.Readiness != nil {
		args["readiness"] = wireArg(req.Readiness)
	}
	if req.Format != "" {
		args["format"] = string(req.Format)
	}
	return args
}

// GetTemplate returns a template with its latest build status.
func (m *SandboxManager) GetTemplate(ctx context.Context, templateID string) (*TemplateInfo, error) {
	var out TemplateInfo
	if err := m.call(ctx, "get_template", map[string]any{"template_id": templateID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListTemplates lists templates (one page).
func (m *SandboxManager) ListTemplates(ctx context.Context, opts ListTemplatesOptions) (*ListTemplatesResponse, error) {
	args := map[string]any{}
	if len(opts.Metadata) > 0 {
		args["metadata"] = opts.Metadata
	}
	if opts.Page > 0 {
		args["page"] = opts.Page
	}
	if opts.PageSize > 0 {
		args["page_size"] = opts.PageSize
	}
	var out ListTemplatesResponse
	if err := m.call(ctx, "list_templates", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteTemplate deletes a template.
func (m *SandboxManager) DeleteTemplate(ctx context.Context, templateID string) error {
	return m.call(ctx, "delete_template", map[string]any{"template_id": templateID}, nil)
}
