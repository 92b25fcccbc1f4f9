/**
 * A loopback TCP proxy that adds a fixed delay to every request: each chunk a client sends is forwarded
 * to the upstream `delayMs` after it arrived, in order (so a request costs one delay more, a large body is
 * not delayed per chunk, and kept-alive connections stay kept alive). Replies pass through at once. Used
 * to measure homefs against a store one network hop away (docs/benchmarks.md, "3. Wake and move over a real store").
 *
 *   node dist/bench/latency-proxy.js <listenPort> <upstreamHost:port> <delayMs>
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export function startLatencyProxy(listenPort: number, upstream: { host: string; port: number }, delayMs: number): Promise<Server> {
  const server = createServer((client: Socket) => {
    const up = createConnection(upstream);
    client.on('data', (chunk) => {
      setTimeout(() => {
        if (!up.destroyed) up.write(chunk);
      }, delayMs);
    });
    up.pipe(client);
    const end = (): void => {
      setTimeout(() => {
        client.destroy();
        up.destroy();
      }, delayMs);
    };
    client.on('end', end);
    client.on('error', end);
    up.on('error', () => client.destroy());
    up.on('close', () => client.destroy());
  });
  return new Promise((resolve) => server.listen(listenPort, '127.0.0.1', () => resolve(server)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [port, target, delay] = process.argv.slice(2);
  const [host, upPort] = (target ?? '').split(':');
  if (!port || !host || !upPort || delay === undefined) {
    console.error('usage: latency-proxy <listenPort> <upstreamHost:port> <delayMs>');
    process.exit(2);
  }
  void startLatencyProxy(Number(port), { host, port: Number(upPort) }, Number(delay)).then(() => console.log(`listening on 127.0.0.1:${port}`));
}
