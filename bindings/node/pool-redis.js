// The official `./pool-redis` subpath (ESM): the Redis pool state store.
import m from './lib/pool-redis.cjs';

export const { RedisPoolStateStore } = m;
export default m;
