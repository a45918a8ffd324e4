"""``SandboxPoolManager{Sync,Async}``: operations on a pool *namespace* (its shared state in
the store), independent of any running pool instance. ``destroy`` fences the name (every
instance stops warming and acquiring), kills the idle sandboxes, clears the shared state
and leaves a tombstone for ``tombstone_ttl``. Sandboxes already handed out are not touched."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable, Optional
from uuid import uuid4

from opensandbox.config.connection import ConnectionConfig
from opensandbox.config.connection_sync import ConnectionConfigSync
from opensandbox.exceptions import PoolDestroyedException, PoolDestroyIncompleteException
from opensandbox.manager import SandboxManager
from opensandbox.pool_types import (
    AsyncPoolStateStore,
    PoolDestroyOptions,
    PoolDestroyResult,
    PoolDestroyState,
    PoolDestroyStrategy,
    PoolStateStore,
)
from opensandbox.sync.manager import SandboxManagerSync

logger = logging.getLogger(__name__)


def _validate(options: PoolDestroyOptions) -> None:
    if options.strategy is not PoolDestroyStrategy.FORCE:
        raise ValueError(f"Only the FORCE pool destroy strategy is supported, got {options.strategy}")


def _already_destroyed(pool_name: str) -> PoolDestroyResult:
    return PoolDestroyResult(pool_name, PoolDestroyState.DESTROYED, 0, 0, persistent_state_cleared=False)


class SandboxPoolManagerSync:
    """Blocking pool namespace manager."""

    def __init__(
        self,
        *,
        state_store: PoolStateStore,
        connection_config: Optional[ConnectionConfigSync] = None,
        owner_id: Optional[str] = None,
        sandbox_manager_factory: Callable[[ConnectionConfigSync], SandboxManagerSync] = SandboxManagerSync.create,
    ) -> None:
        self._store = state_store
        self._connection_config = connection_config or ConnectionConfigSync()
        self._owner_id = owner_id or f"pool-manager-{uuid4()}"
        self._manager_factory = sandbox_manager_factory

    def destroy(self, pool_name: str, options: Optional[PoolDestroyOptions] = None) -> PoolDestroyResult:
        """Destroys ``pool_name`` (idempotent: a destroyed name returns DESTROYED with zero
        counts). Raises ``PoolDestroyIncompleteException`` when the drain exceeds
        ``drain_timeout`` or the store fails midway; calling again resumes."""
        options = options or PoolDestroyOptions()
        _validate(options)
        if self._store.get_destroy_state(pool_name) == PoolDestroyState.DESTROYED:
            return _already_destroyed(pool_name)
        try:
            self._store.begin_destroy(pool_name, self._owner_id)
        except PoolDestroyedException:
            return _already_destroyed(pool_name)
        manager = self._manager_factory(self._connection_config)
        drained = killed = 0
        budget = options.drain_timeout.total_seconds()
        deadline = time.monotonic() + budget
        try:
            while True:
                sandbox_id = self._store.try_take_idle(pool_name)
                if sandbox_id is None:
                    break
                drained += 1
                try:
                    manager.kill_sandbox(sandbox_id)
                    killed += 1
                except Exception as exc:
                    logger.warning("destroy %s: killing idle sandbox %s failed: %s", pool_name, sandbox_id, exc)
                if budget > 0 and time.monotonic() > deadline:
                    raise PoolDestroyIncompleteException(
                        f"Pool destroy drain timed out after {options.drain_timeout}: pool_name={pool_name} "
                        f"drained={drained} killed={killed}"
                    )
            try:
                self._store.clear_pool_state(pool_name)
            except Exception as exc:
                raise PoolDestroyIncompleteException(
                    f"Pool destroy failed to clear persistent state: pool_name={pool_name}", exc
                ) from exc
            try:
                self._store.mark_destroyed(pool_name, self._owner_id, options.tombstone_ttl)
            except Exception as exc:
                raise PoolDestroyIncompleteException(
                    f"Pool destroy failed to write the tombstone: pool_name={pool_name}", exc
                ) from exc
            return PoolDestroyResult(pool_name, PoolDestroyState.DESTROYED, drained, killed, True)
        finally:
            manager.close()


class SandboxPoolManagerAsync:
    """Asyncio pool namespace manager."""

    def __init__(
        self,
        *,
        state_store: AsyncPoolStateStore,
        connection_config: Optional[ConnectionConfig] = None,
        owner_id: Optional[str] = None,
        sandbox_manager_factory: Callable[[ConnectionConfig], Awaitable[SandboxManager]] = SandboxManager.create,
    ) -> None:
        self._store = state_store
        self._connection_config = connection_config or ConnectionConfig()
        self._owner_id = owner_id or f"pool-manager-{uuid4()}"
        self._manager_factory = sandbox_manager_factory

    async def destroy(self, pool_name: str, options: Optional[PoolDestroyOptions] = None) -> PoolDestroyResult:
        """See :meth:`SandboxPoolManagerSync.destroy`."""
        options = options or PoolDestroyOptions()
        _validate(options)
        if await self._store.get_destroy_state(pool_name) == PoolDestroyState.DESTROYED:
            return _already_destroyed(pool_name)
        try:
            await self._store.begin_destroy(pool_name, self._owner_id)
        except PoolDestroyedException:
            return _already_destroyed(pool_name)
        manager = await self._manager_factory(self._connection_config)
        drained = killed = 0
        loop = asyncio.get_running_loop()
        budget = options.drain_timeout.total_seconds()
        deadline = loop.time() + budget
        try:
            while True:
                sandbox_id = await self._store.try_take_idle(pool_name)
                if sandbox_id is None:
                    break
                drained += 1
                try:
                    await manager.kill_sandbox(sandbox_id)
                    killed += 1
                except Exception as exc:
                    logger.warning("destroy %s: killing idle sandbox %s failed: %s", pool_name, sandbox_id, exc)
                if budget > 0 and loop.time() > deadline:
                    raise PoolDestroyIncompleteException(
                        f"Pool destroy drain timed out after {options.drain_timeout}: pool_name={pool_name} "
                        f"drained={drained} killed={killed}"
                    )
            try:
                await self._store.clear_pool_state(pool_name)
            except Exception as exc:
                raise PoolDestroyIncompleteException(
                    f"Pool destroy failed to clear persistent state: pool_name={pool_name}", exc
                ) from exc
            try:
                await self._store.mark_destroyed(pool_name, self._owner_id, options.tombstone_ttl)
            except Exception as exc:
                raise PoolDestroyIncompleteException(
                    f"Pool destroy failed to write the tombstone: pool_name={pool_name}", exc
                ) from exc
            return PoolDestroyResult(pool_name, PoolDestroyState.DESTROYED, drained, killed, True)
        finally:
            await manager.close()


SandboxPoolManager = SandboxPoolManagerSync

__all__ = ["SandboxPoolManager", "SandboxPoolManagerAsync", "SandboxPoolManagerSync"]
