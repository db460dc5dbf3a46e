/**
 * Who holds a title, sampled every 50 ms from each process that could hold it, and the instants
 * at which two of them provably held it at once. A process is known to hold the title between two
 * consecutive samples that both say so (a sample is timed when its answer arrives: a process's
 * answer describes it at about that moment, even one that was stopped and answers late); a process
 * that does not answer is unknown there. Two processes whose known holding intervals intersect held
 * the title at the same instant.
 */

export interface HolderProbe {
  readonly name: string;
  /** true: holds the title; false: does not; undefined: no answer. */
  readonly holds: () => Promise<boolean | undefined>;
}

export interface Overlap {
  readonly a: string;
  readonly b: string;
  readonly from: number;
  readonly to: number;
}

interface Sample {
  readonly at: number;
  readonly holds: boolean | undefined;
}

export class HolderWatch {
  readonly #probes: HolderProbe[];
  readonly #samples: Sample[][];
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #inFlight: boolean[];

  /** @example const watch = new HolderWatch([{ name: 'c0', holds: () => ... }, ...]); ...; watch.stop(); expect(watch.overlaps()).toEqual([]); */
  constructor(probes: HolderProbe[], everyMs = 50) {
    this.#probes = probes;
    this.#samples = probes.map(() => []);
    this.#inFlight = probes.map(() => false);
    this.#timer = setInterval(() => this.#sample(), everyMs);
    this.#sample();
  }

  /** Samples taken so far, all processes together. */
  get count(): number {
    return this.#samples.reduce((n, s) => n + s.length, 0);
  }

  /** The latest answer of each process. */
  latest(): (boolean | undefined)[] {
    return this.#samples.map((s) => s.at(-1)?.holds);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Every pair of intervals in which two processes both provably held the title. */
  overlaps(): Overlap[] {
    const intervals = this.#samples.map(held);
    const found: Overlap[] = [];
    for (let i = 0; i < intervals.length; i++) {
      for (let j = i + 1; j < intervals.length; j++) {
        for (const x of intervals[i]!) {
          for (const y of intervals[j]!) {
            const from = Math.max(x[0], y[0]);
            const to = Math.min(x[1], y[1]);
            if (from <= to) found.push({ a: this.#probes[i]!.name, b: this.#probes[j]!.name, from, to });
          }
        }
      }
    }
    return found;
  }

  #sample(): void {
    this.#probes.forEach((probe, i) => {
      if (this.#inFlight[i]) return;
      this.#inFlight[i] = true;
      probe
        .holds()
        .catch(() => undefined)
        .then((holds) => {
          this.#samples[i]!.push({ at: Date.now(), holds });
          this.#inFlight[i] = false;
        });
    });
  }
}

/** The intervals in which consecutive samples both say the process held the title (a lone one: an instant). */
function held(samples: readonly Sample[]): [number, number][] {
  const out: [number, number][] = [];
  for (let k = 0; k < samples.length; k++) {
    const s = samples[k]!;
    if (s.holds !== true) continue;
    const next = samples[k + 1];
    out.push([s.at, next?.holds === true ? next.at : s.at]);
  }
  return out;
}
