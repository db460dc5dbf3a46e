/**
 * Who holds a title, sampled every 50 ms from each process that could hold it, and the instants
 * at which two of them provably held it at once. An answer describes its process at some instant
 * between the probe's sending and the answer's arrival; the next probe is sent only after that
 * arrival. So two consecutive answers that both say "holds" prove the process held the title from
 * the first answer's arrival to the second probe's sending (assuming it did not let go and take it
 * back in between); a lone answer proves no particular instant, and a process that does not answer
 * is unknown there. Two processes whose proven intervals intersect held the title at the same
 * instant. Timing by arrival alone was not enough: a starved test process reads answers late, and
 * an answer given before a hand-over then seemed to overlap one given after it.
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
  /** When the probe was sent. */
  readonly sent: number;
  /** When its answer arrived. */
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

  /**
   * What each process answered from `from` to `to` (epoch ms), one line per sample: for reading an
   * overlap when one is found.
   * @example console.log(watch.around(overlap.from - 1000, overlap.to + 1000));
   */
  around(from: number, to: number): string {
    const iso = (t: number): string => new Date(t).toISOString().slice(11, 23);
    return this.#samples
      .flatMap((samples, i) => samples.filter((s) => s.at >= from && s.sent <= to).map((s) => ({ ...s, name: this.#probes[i]!.name })))
      .sort((a, b) => a.sent - b.sent)
      .map((s) => `${s.name}: sent ${iso(s.sent)} answered ${iso(s.at)} holds ${String(s.holds)}`)
      .join('\n');
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
      const sent = Date.now();
      probe
        .holds()
        .catch(() => undefined)
        .then((holds) => {
          this.#samples[i]!.push({ sent, at: Date.now(), holds });
          this.#inFlight[i] = false;
        });
    });
  }
}

/**
 * The intervals in which a process provably held the title: from the arrival of an answer saying
 * so to the sending of the next probe, when that one says so too.
 */
export function held(samples: readonly Sample[]): [number, number][] {
  const out: [number, number][] = [];
  for (let k = 0; k + 1 < samples.length; k++) {
    const s = samples[k]!;
    const next = samples[k + 1]!;
    if (s.holds === true && next.holds === true && s.at <= next.sent) out.push([s.at, next.sent]);
  }
  return out;
}
