const b = process.argv[2];
const t = performance.now();
await Promise.all(['cli/mount.js','home/home.js','metrics/homefs.js','daemon/services.js','fuse/index.js','store/s3lean.js','store/open.js','store/retry.js','store/probe.js'].map((m) => import(`${b}/dist/src/${m}`).catch(() => undefined)));
console.log((performance.now()).toFixed(0), (process.cpuUsage().user / 1000) | 0, process.moduleLoadList.filter((x) => /undici|tls$/.test(x)).join(',') || '-');
