"""Redis-backed pool state stores (``pip install 'opensandbox[pool-redis]'``). Pass a
caller-managed redis-py client: ``redis.Redis`` for the blocking store,
``redis.asyncio.Redis`` for the async one."""

from opensandbox.async_redis_pool_store import AsyncRedisPoolStateStore
from opensandbox.redis_pool_store import RedisPoolStateStore

__all__ = ["AsyncRedisPoolStateStore", "RedisPoolStateStore"]
