/**
 * node:http and node:https, loaded through `require`. An ES `import` of node:http builds the module's
 * namespace from every export, which evaluates its lazy getters (`WebSocket`, `CloseEvent`, ...) and so
 * loads Node's bundled undici: about 150 ms of a mount's start on this project's benchmark machine, for
 * nothing homefs uses (docs/decisions/0054-wake-serving-sooner.md). `require` leaves those getters alone.
 * node:https (TLS) is loaded only by whoever needs it, on first use.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const http = require('node:http') as typeof import('node:http');

let tls: typeof import('node:https') | undefined;

/** node:https, loaded on the first call (a store over plain http never loads TLS). */
export function https(): typeof import('node:https') {
  tls ??= require('node:https') as typeof import('node:https');
  return tls;
}
