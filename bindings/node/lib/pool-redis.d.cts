// GENERATED from ../pool-redis.d.ts by scripts/gen-dcts.mjs: do not edit.
// The official `./pool-redis` subpath: the Redis-backed pool state store. The client is
// the caller's (node-redis `createClient()`, connected); the store never quits it.
import type { IdleEntry, PoolDestroyState, PoolStateStore, ReapResult, StoreCounters, TakeIdleResult } from './index.cjs';

/** Minimal surface implemented by node-redis and compatible Redis clients. */
export interface RedisPoolClient {
  sendCommand(command: string[]): Promise<unknown>;
}

export interface RedisPoolStateStoreOptions {
  client: RedisPoolClient;
  /** Key prefix of every pool's keys (default `opensandbox:pool`, the official SDKs' one). */
  keyPrefix?: string;
}

/** Redis-backed distributed pool state (the official SDKs' key layout). */
export declare class RedisPoolStateStore implements PoolStateStore {
  static readonly DEFAULT_KEY_PREFIX: string;
  constructor(options: RedisPoolStateStoreOptions);
  readonly keyPrefix: string;
  tryTakeIdle(poolName: string): Promise<string | undefined>;
  tryTakeIdleWithMinTtl(poolName: string, minRemainingTtlSeconds: number): Promise<TakeIdleResult>;
  putIdle(poolName: string, sandboxId: string): Promise<void>;
  removeIdle(poolName: string, sandboxId: string): Promise<void>;
  tryAcquirePrimaryLock(poolName: string, ownerId: string, ttlSeconds: number): Promise<boolean>;
  renewPrimaryLock(poolName: string, ownerId: string, ttlSeconds: number): Promise<boolean>;
  releasePrimaryLock(poolName: string, ownerId: string): Promise<void>;
  reapExpiredIdle(poolName: string, now: Date): Promise<void>;
  reapExpiredIdleWithMinTtl(poolName: string, now: Date, minRemainingTtlSeconds: number): Promise<ReapResult>;
  snapshotCounters(poolName: string): Promise<StoreCounters>;
  snapshotIdleEntries(poolName: string): Promise<IdleEntry[]>;
  getMaxIdle(poolName: string): Promise<number | undefined>;
  setMaxIdle(poolName: string, maxIdle: number): Promise<void>;
  setIdleEntryTtl(poolName: string, ttlSeconds: number): Promise<void>;
  getDestroyState(poolName: string): Promise<PoolDestroyState>;
  beginDestroy(poolName: string, ownerId: string): Promise<void>;
  clearPoolState(poolName: string): Promise<void>;
  markDestroyed(poolName: string, ownerId: string, tombstoneTtlSeconds?: number | null): Promise<void>;
}
