/**
 * Types of the prom-client modules pdlink loads one by one (see metrics.ts): the package types only
 * its index, whose classes and functions these modules export as `module.exports`.
 */
declare module 'prom-client/lib/registry.js' {
  import { Registry } from 'prom-client';
  export default Registry;
}
declare module 'prom-client/lib/counter.js' {
  import { Counter } from 'prom-client';
  export default Counter;
}
declare module 'prom-client/lib/gauge.js' {
  import { Gauge } from 'prom-client';
  export default Gauge;
}
declare module 'prom-client/lib/histogram.js' {
  import { Histogram } from 'prom-client';
  export default Histogram;
}
declare module 'prom-client/lib/metrics/*.js' {
  import type { Registry } from 'prom-client';
  /** Registers one group of prom-client's default metrics on `registry`. */
  const collect: (registry: Registry, config: { prefix?: string; eventLoopMonitoringPrecision?: number }) => void;
  export default collect;
}
