"""Async ``Egress`` service: the sandbox's egress policy and its credential vault
(``CredentialVault``, what ``Sandbox.credential_vault`` returns)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from opensandbox import _bridge
from opensandbox.exceptions import InvalidArgumentException
from opensandbox.models.sandboxes import (
    Credential,
    CredentialBinding,
    CredentialBindingMetadata,
    CredentialBindingMutationSet,
    CredentialMetadata,
    CredentialMutationSet,
    CredentialVaultState,
    NetworkPolicy,
    NetworkRule,
)


def _validated(cls: Any, value: Any) -> Any:
    if isinstance(value, cls):
        return value
    try:
        return cls.model_validate(value)
    except Exception as e:
        raise InvalidArgumentException(f"invalid {cls.__name__}: {e}") from e


def _credential(value: Union[Credential, Dict[str, object]]) -> Dict[str, Any]:
    c: Credential = _validated(Credential, value)
    source = c.source if isinstance(c.source, dict) else c.source.model_dump()
    return {"name": c.name, "source": {"type": source.get("type", "inline"), "value": source.get("value")}}


def _binding(value: Union[CredentialBinding, Dict[str, object]]) -> Dict[str, Any]:
    b: CredentialBinding = _validated(CredentialBinding, value)
    match = b.match if isinstance(b.match, dict) else b.match.model_dump(exclude_none=True)
    auth: Dict[str, Any] = b.auth if isinstance(b.auth, dict) else b.auth.model_dump(exclude_none=True, by_alias=True)
    auth = dict(auth)
    if auth.get("headers") is not None:
        auth["headers"] = [dict(h) for h in auth["headers"]]
    if auth.get("substitutions") is not None:
        auth["substitutions"] = [
            {"credential": s["credential"], "placeholder": s["placeholder"], "in": list(s.get("in", s.get("in_", [])))}
            for s in auth["substitutions"]
        ]
    return {"name": b.name, "match": dict(match), "auth": auth}


def _mutations(kind: Any, one: Any, value: Any) -> Optional[Dict[str, Any]]:
    if value is None:
        return None
    m = _validated(kind, value)
    return {
        "add": [one(x) for x in m.add or []],
        "replace": [one(x) for x in m.replace or []],
        "delete": list(m.delete or []),
    }


class CredentialVault:
    """The sandbox's credential vault. Values are write-only: every answer is metadata.
    On the reference server the vault is stored, not enforced (sandboxes have no
    network)."""

    def __init__(self, client: Any, sandbox_id: str) -> None:
        self._client = client
        self._id = sandbox_id

    async def _vault(self, op: str, **args: Any) -> Any:
        args["sandbox"] = self._id
        return await _bridge.acall(self._client, op, args)

    async def create(
        self,
        *,
        credentials: List[Union[Credential, Dict[str, object]]],
        bindings: List[Union[CredentialBinding, Dict[str, object]]],
    ) -> CredentialVaultState:
        r = await self._vault(
            "credential_vault.create",
            credentials=[_credential(c) for c in credentials],
            bindings=[_binding(b) for b in bindings],
        )
        return CredentialVaultState.model_validate(r)

    async def get(self) -> CredentialVaultState:
        return CredentialVaultState.model_validate(await self._vault("credential_vault.get"))

    async def patch(
        self,
        *,
        expected_revision: Optional[int] = None,
        credentials: Union[CredentialMutationSet, Dict[str, object], None] = None,
        bindings: Union[CredentialBindingMutationSet, Dict[str, object], None] = None,
    ) -> CredentialVaultState:
        if credentials is None and bindings is None:
            raise InvalidArgumentException("a credential vault patch needs credentials or bindings")
        args: Dict[str, Any] = {"expected_revision": expected_revision}
        creds = _mutations(CredentialMutationSet, _credential, credentials)
        if creds is not None:
            args["credentials"] = creds
        binds = _mutations(CredentialBindingMutationSet, _binding, bindings)
        if binds is not None:
            args["bindings"] = binds
        return CredentialVaultState.model_validate(await self._vault("credential_vault.patch", **args))

    async def delete(self) -> None:
        await self._vault("credential_vault.delete")

    async def list_credentials(self) -> List[CredentialMetadata]:
        r = await self._vault("credential_vault.list_credentials")
        return [CredentialMetadata.model_validate(x) for x in r]

    async def get_credential(self, name: str) -> CredentialMetadata:
        return CredentialMetadata.model_validate(await self._vault("credential_vault.get_credential", name=name))

    async def list_bindings(self) -> List[CredentialBindingMetadata]:
        r = await self._vault("credential_vault.list_bindings")
        return [CredentialBindingMetadata.model_validate(x) for x in r]

    async def get_binding(self, name: str) -> CredentialBindingMetadata:
        return CredentialBindingMetadata.model_validate(await self._vault("credential_vault.get_binding", name=name))


class Egress(CredentialVault):
    """Get / patch / delete egress rules of one sandbox, and its credential vault."""

    async def get_policy(self) -> NetworkPolicy:
        r = await _bridge.acall(self._client, "sandbox.get_egress_policy", {"sandbox": self._id})
        return NetworkPolicy.model_validate(r)

    async def patch_rules(self, rules: List[NetworkRule]) -> None:
        items = [{"action": r.action, "target": r.target} for r in rules]
        await _bridge.acall(self._client, "sandbox.patch_egress_rules", {"sandbox": self._id, "rules": items})

    async def delete_rules(self, targets: List[str]) -> None:
        await _bridge.acall(
            self._client, "sandbox.delete_egress_rules", {"sandbox": self._id, "targets": list(targets)}
        )


__all__ = ["CredentialVault", "Egress"]
