// Type-checked by `make test-node` (tsc --strict): code written for the official
// @alibaba-group/opensandbox API must compile against our declarations unchanged.
import {
  ConnectionConfig,
  DEFAULT_EXECD_PORT,
  Sandbox,
  SandboxApiException,
  SandboxManager,
  type Execution,
  type ExecutionHandlers,
  type FileInfo,
  type SandboxInfo,
  type ServerStreamEvent,
} from '../../index.js';
import { CodeInterpreter, SupportedLanguages } from '../../code-interpreter.js';
import { Readable } from 'node:stream';

export async function official(): Promise<void> {
  const connectionConfig = new ConnectionConfig({ domain: 'localhost:8080', apiKey: 'k', requestTimeoutSeconds: 10 });
  const sandbox = await Sandbox.create({
    connectionConfig,
    image: { uri: 'python:3.12' },
    timeoutSeconds: null,
    resource: { cpu: '1', memory: '2Gi' },
    healthCheck: async (s: Sandbox) => s.isHealthy(),
  });
  const handlers: ExecutionHandlers = {
    onStdout: async (m) => void m.text.toUpperCase(),
    onError: (e) => void e.traceback.length,
    skipAccumulation: false,
  };
  const ac = new AbortController();
  const ex: Execution = await sandbox.commands.run('ls', { workingDirectory: '/', timeoutSeconds: 5 }, handlers, ac.signal);
  const code: number | null | undefined = ex.exitCode;
  void code;
  for await (const ev of sandbox.commands.runStream('echo x')) {
    const e: ServerStreamEvent = ev;
    void e.type;
  }
  await sandbox.files.writeFiles([
    { path: '/a', data: 'x', mode: 644 },
    { path: '/b', data: new Uint8Array(1) },
    { path: '/c', data: Readable.from([Buffer.from('x')]) },
  ]);
  const info: Record<string, FileInfo> = await sandbox.files.getFileInfo(['/a']);
  const when: Date | undefined = info['/a']?.modifiedAt;
  void when;
  for await (const chunk of sandbox.files.readBytesStream('/a')) void chunk.byteLength;
  const sid = await sandbox.commands.createSession({ workingDirectory: '/tmp' });
  await sandbox.commands.runInSession(sid, 'pwd', { timeoutSeconds: 3 });
  const ep = await sandbox.getEndpoint(DEFAULT_EXECD_PORT);
  void ep.headers;
  const renewed = await sandbox.renew(600);
  void renewed.expiresAt;
  const m = SandboxManager.create({ connectionConfig: { domain: 'localhost:8080' } });
  const page = await m.listSandboxInfos({ states: ['Running'], pageSize: 10 });
  const first: SandboxInfo | undefined = page.items[0];
  const expires: Date | null | undefined = first?.expiresAt;
  void expires;
  const ci = await CodeInterpreter.create(sandbox);
  const ctx = await ci.codes.createContext(SupportedLanguages.PYTHON);
  const r = await ci.codes.run('1+1', { context: ctx });
  void r.result[0]?.text;
  try {
    await m.getSandboxInfo('x');
  } catch (e) {
    if (e instanceof SandboxApiException) void [e.statusCode, e.error.code, e.requestId, e.rawBody];
  }
  await sandbox.kill();
}
