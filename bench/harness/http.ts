// Clients for the phases autocannon does not cover: node:http for sanity checks, the end-to-end loop
// and triggering runs; bare sockets for holding many sync requests open at once.
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { now } from '../shared.js';

export interface Answer {
  status: number;
  text: string;
  /** When the answer arrived (our clock, `now()`): its end for node:http calls, its first byte for held requests. */
  at: number;
}

export interface Call {
  method?: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  body?: string;
}

/** One request; resolves with the whole answer, rejects on a network error. */
export function httpCall(agent: Agent, call: Call, onSocket?: () => void): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(call.url, { method: call.method ?? 'GET', headers: call.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), at: now() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (onSocket) {
      req.once('socket', (socket) => {
        if (socket.connecting) socket.once('connect', onSocket);
        else onSocket();
      });
    }
    req.end(call.body);
  });
}

/**
 * What the harness reads in the library's trigger and sync answers. The answers are checked, not trusted:
 * every field may be missing and its leaves are `unknown` until a check (`typeof`, `=== true`) narrows them.
 */
export interface TriggerAnswerBody {
  success?: unknown;
  invocation?: { id?: unknown };
  outputs?: Array<{ title?: unknown; message?: unknown } | undefined>;
}

/** The answer's JSON body when it is an object (or array), else undefined (not JSON, or a bare value). */
export function parseJson(answer: Answer): TriggerAnswerBody | undefined {
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return undefined;
  }
  return typeof body === 'object' && body !== null ? body : undefined;
}

/** Runs `calls` with at most `concurrency` in flight; answers in input order. */
export async function callAll(agent: Agent, calls: Call[], concurrency: number): Promise<Answer[]> {
  const answers = new Array<Answer>(calls.length);
  let next = 0;
  const worker = async () => {
    while (next < calls.length) {
      const i = next++;
      answers[i] = await httpCall(agent, calls[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, calls.length) }, worker));
  return answers;
}

export interface HeldRequests {
  /** Resolves once every request has its own connected socket and has been written. */
  connected: Promise<void>;
  /** Every answer, in input order (rejects on the first network error). */
  answers: Promise<Answer[]>;
  /** Closes every socket of these requests. */
  destroy(): void;
}

/**
 * Opens one keep-alive connection per request (GET) and sends them all, `batch` connections
 * at a time so the listen backlog never overflows (a dropped SYN would cost a 1 s retransmit and
 * distort the set-up). The requests then stay open until the server answers.
 *
 * Deliberately not node:http: when thousands of answers arrive at once, its client spends tens of
 * microseconds per response, which would be measured as the server's delay. Here an answer is timed
 * at its first byte, from a bare socket, and parsed as its bytes come; the socket is closed once the
 * answer is whole.
 */
export function holdRequests(calls: Call[], batch = 250): HeldRequests {
  const sockets: Socket[] = [];
  const answers: Array<Promise<Answer>> = [];
  const connected = (async () => {
    for (let start = 0; start < calls.length; start += batch) {
      await Promise.all(
        calls.slice(start, start + batch).map(
          (call) =>
            new Promise<void>((resolve) => {
              const { socket, answer } = bareGet(call, resolve);
              sockets.push(socket);
              answer.catch(() => resolve());
              answers.push(answer);
            }),
        ),
      );
    }
  })();
  return {
    connected,
    answers: connected.then(() => Promise.all(answers)),
    destroy: () => sockets.forEach((s) => s.destroy()),
  };
}

function bareGet(call: Call, onSent: () => void): { socket: Socket; answer: Promise<Answer> } {
  const url = new URL(call.url);
  const head =
    [
      `GET ${url.pathname}${url.search} HTTP/1.1`,
      `Host: ${url.host}`,
      ...Object.entries(call.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
    ].join('\r\n') + '\r\n\r\n';
  const socket = connect(Number(url.port), url.hostname);
  socket.setNoDelay(true);
  const answer = new Promise<Answer>((resolve, reject) => {
    let at = 0;
    let received: Buffer = Buffer.alloc(0);
    socket.once('connect', () => {
      socket.write(head);
      onSent();
    });
    socket.on('data', (chunk: Buffer) => {
      if (at === 0) at = now();
      received = received.length ? Buffer.concat([received, chunk]) : chunk;
      const parsed = tryParseHttpResponse(received);
      if (parsed) {
        socket.destroy();
        resolve({ ...parsed, at });
      }
    });
    socket.once('close', () => reject(new Error(`connection closed before a whole answer (${received.length} bytes)`)));
    socket.once('error', reject);
  });
  return { socket, answer };
}

/** Status and body of an HTTP/1.1 response once it is complete (Content-Length or chunked), else null. */
export function tryParseHttpResponse(raw: Buffer): { status: number; text: string } | null {
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) return null;
  const head = raw.subarray(0, split).toString('latin1');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
  const body = raw.subarray(split + 4);
  const length = /^content-length:\s*(\d+)/im.exec(head);
  if (length) return body.length >= Number(length[1]) ? { status, text: body.subarray(0, Number(length[1])).toString('utf8') } : null;
  if (!/^transfer-encoding:\s*chunked/im.test(head)) throw new Error(`answer with neither Content-Length nor chunked encoding: ${head}`);
  const parts: Buffer[] = [];
  for (let i = 0; ;) {
    const eol = body.indexOf('\r\n', i);
    if (eol < 0) return null;
    const size = parseInt(body.subarray(i, eol).toString('latin1'), 16);
    if (size === 0) return { status, text: Buffer.concat(parts).toString('utf8') };
    if (body.length < eol + 2 + size + 2) return null;
    parts.push(body.subarray(eol + 2, eol + 2 + size));
    i = eol + 2 + size + 2;
  }
}
