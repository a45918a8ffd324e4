"""The 1.1 control-plane features against the real reference server: templates,
``create_from_template``, the credential vault, lifecycle hooks and the 1.1 create
options, through the public async and sync APIs."""

import asyncio
from datetime import timedelta

import pytest

from opensandbox import Sandbox, SandboxManager, SandboxManagerSync, SandboxSync
from opensandbox.exceptions import InvalidArgumentException, SandboxApiException, SandboxException
from opensandbox.models.sandboxes import (
    PVC,
    CredentialProxyConfig,
    LifecycleHook,
    NetworkPolicy,
    NetworkRule,
    PeriodicLifecycleHook,
    SandboxLifecycle,
    SandboxOrigin,
    Volume,
)
from opensandbox.models.templates import CreateTemplateRequest, TemplateFilter, TemplatePhase

SECRET = "pytest-SECRET-d41d8cd9"


def text(execution):
    return "".join(m.text for m in execution.logs.stdout)


async def _built(manager, template_id, within=60.0):
    deadline = asyncio.get_running_loop().time() + within
    while True:
        info = await manager.get_template(template_id)
        if info.status.phase in (TemplatePhase.SUCCEEDED, TemplatePhase.FAILED):
            return info
        assert asyncio.get_running_loop().time() < deadline, info
        await asyncio.sleep(0.1)


async def test_templates_build_and_back_sandboxes(server):
    manager = await SandboxManager.create()
    info = await manager.create_template(
        CreateTemplateRequest(
            image="python:3.11",
            publish="s3://pytest/publish",
            entrypoint=["sleep", "infinity"],
            env={"TPL": "from-template"},
            metadata={"suite": "pytest-templates"},
        )
    )
    assert info.template_id.startswith("tpl_")
    assert info.status.phase in (TemplatePhase.PENDING, TemplatePhase.BUILDING)
    assert info.format == "overlaybd"
    built = await _built(manager, info.template_id)
    assert built.status.phase == TemplatePhase.SUCCEEDED, built
    assert built.status.manifest_ref.startswith("local:templates/")
    assert built.env == {"TPL": "from-template"}
    page = await manager.list_templates(TemplateFilter(metadata={"suite": "pytest-templates"}))
    assert [t.template_id for t in page.template_infos] == [info.template_id]
    assert page.pagination.total_items == 1

    sb = await Sandbox.create_from_template(info.template_id, timeout=timedelta(minutes=5), metadata={"m": "1"})
    try:
        assert sb.origin == SandboxOrigin.TEMPLATE
        assert text(await sb.commands.run("echo $TPL")).strip() == "from-template"
        with pytest.raises(SandboxException):
            _ = sb.credential_vault
        # A new handle learns the origin from the server's OPEN-SANDBOX-ORIGIN header;
        # its egress policy comes through the lifecycle server's /networkpolicy.
        again = await Sandbox.connect(sb.id, skip_health_check=True)
        assert again.origin == SandboxOrigin.TEMPLATE
        assert (await again.get_endpoint(44772)).origin == SandboxOrigin.TEMPLATE
        with pytest.raises(SandboxException):
            _ = again.credential_vault
        await again.get_egress_policy()
        await manager.delete_template(info.template_id)
        with pytest.raises(SandboxApiException) as e:
            await manager.get_template(info.template_id)
        assert e.value.status_code == 404
        # The sandbox keeps running without its template.
        assert text(await sb.commands.run("echo alive")).strip() == "alive"
    finally:
        await sb.kill()
    with pytest.raises(SandboxApiException) as e:
        await Sandbox.create_from_template(info.template_id, timeout=timedelta(minutes=5))
    assert e.value.status_code == 404
    with pytest.raises(InvalidArgumentException):
        await Sandbox.create_from_template(" ", timeout=timedelta(minutes=5))
    with pytest.raises(SandboxApiException) as e:
        await manager.create_template(CreateTemplateRequest(image="python:3.11", publish="s3://x", env={"1X": "y"}))
    assert e.value.status_code == 400


def test_templates_sync(server):
    manager = SandboxManagerSync.create()
    info = manager.create_template(CreateTemplateRequest(image="python:3.11", publish="s3://pytest/sync"))
    assert manager.get_template(info.template_id).template_id == info.template_id
    assert info.template_id in [t.template_id for t in manager.list_templates(TemplateFilter()).template_infos]
    manager.delete_template(info.template_id)


async def test_credential_vault_keeps_secrets_write_only(server):
    policy = NetworkPolicy(default_action="deny", egress=[NetworkRule(action="allow", target="*.example.com")])
    sb = await Sandbox.create(
        "python:3.11", network_policy=policy, credential_proxy=CredentialProxyConfig(enabled=True)
    )
    try:
        vault = sb.credential_vault
        state = await vault.create(
            credentials=[{"name": "gh", "source": {"type": "inline", "value": SECRET}}],
            bindings=[
                {
                    "name": "sub",
                    "match": {"hosts": ["api.example.com"]},
                    "auth": {
                        "type": "passthrough",
                        "substitutions": [{"credential": "gh", "placeholder": "__GH__", "in": ["query"]}],
                    },
                }
            ],
        )
        assert state.revision == 1
        assert state.credentials[0].source_type == "inline"
        assert state.bindings[0].auth.type == "passthrough"
        assert SECRET not in state.model_dump_json()
        with pytest.raises(SandboxApiException) as e:
            await vault.patch(expected_revision=5, bindings={"delete": ["sub"]})
        assert e.value.status_code == 409
        state = await vault.patch(expected_revision=1, bindings={"delete": ["sub"]})
        assert state.revision == 2 and state.bindings == []
        assert [c.name for c in await vault.list_credentials()] == ["gh"]
        assert (await vault.get_credential("gh")).revision == 1
        assert await vault.list_bindings() == []
        with pytest.raises(SandboxApiException) as e:
            await vault.get_binding("sub")
        assert e.value.status_code == 404
        await vault.delete()
        with pytest.raises(SandboxApiException) as e:
            await vault.get()
        assert e.value.status_code == 404
    finally:
        await sb.kill()


def test_credential_vault_needs_the_proxy_sync(server):
    sb = SandboxSync.create("python:3.11")
    try:
        with pytest.raises(SandboxApiException) as e:
            sb.credential_vault.get()
        assert e.value.status_code == 412
    finally:
        sb.kill()


async def test_lifecycle_hooks_run_inside_the_sandbox(server):
    sb = await Sandbox.create(
        "python:3.11",
        lifecycle=SandboxLifecycle(
            pre_start=LifecycleHook(command=["sh", "-c", "echo ready > /tmp/pre"]),
            periodic=[
                PeriodicLifecycleHook(name="tick", schedule="@every 1s", command=["sh", "-c", "echo t >> /tmp/t"])
            ],
        ),
        resource_requests={"cpu": "500m"},
    )
    try:
        assert text(await sb.commands.run("cat /tmp/pre")).strip() == "ready"
        for _ in range(100):
            if text(await sb.commands.run("wc -l < /tmp/t 2>/dev/null || echo 0")).strip() not in ("", "0", "1"):
                break
            await asyncio.sleep(0.2)
        else:
            pytest.fail("the periodic hook did not run twice")
        logs = await sb.get_diagnostic_logs("all")
        assert "[lifecycle preStart] exited with code 0" in logs.content
        info = await sb.get_info()
        assert info.allocation is None
    finally:
        await sb.kill()
    with pytest.raises(SandboxApiException) as e:
        await Sandbox.create("python:3.11", lifecycle={"preStart": {"command": ["sh", "-c", "exit 9"]}})
    assert e.value.status_code == 500
    assert "exited with code 9" in str(e.value)


async def test_pvc_volumes_go_through(server):
    sb = await Sandbox.create(
        "python:3.11",
        volumes=[Volume(name="data", pvc=PVC(claim_name="pytest-claim"), mount_path="/data")],
    )
    try:
        await sb.commands.run("echo kept > /data/f")
        assert text(await sb.commands.run("cat /data/f")).strip() == "kept"
    finally:
        await sb.kill()
    with pytest.raises(SandboxApiException) as e:
        await Sandbox.create("python:3.11", secure_access=True)
    assert e.value.status_code == 400
