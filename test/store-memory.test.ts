/** The in-memory store (tests, benchmarks) against the Store conformance suite. */
import { MemoryStore } from '../src/store/memory.js';
import { storeConformance } from './support/store-conformance.js';

storeConformance('memory', async () => new MemoryStore());
