import { createHash } from 'node:crypto';

/**
 * How fast one core of this machine is right now: SHA-256 digests of 1 KiB per second, the median
 * of five 200 ms samples taken while nothing else of the harness runs. The same code on the same
 * kind of machine measured 1,499 and 830 req/s on different days (bench/README.md, "Caveats"):
 * the report records this figure at the start and the end of each database's runs, so that
 * absolute figures of two reports can be set against the speed of the machines that made them.
 * Ratios to the reference need no such correction: both servers run on the same machine at once.
 */
export function cpuSpeed(): number {
  const block = Buffer.alloc(1024, 7);
  const samples: number[] = [];
  for (let s = 0; s < 5; s++) {
    const start = process.hrtime.bigint();
    let digests = 0;
    while (process.hrtime.bigint() - start < 200_000_000n) {
      for (let i = 0; i < 100; i++) createHash('sha256').update(block).digest();
      digests += 100;
    }
    samples.push((digests * 1e9) / Number(process.hrtime.bigint() - start));
  }
  return Math.round(samples.sort((a, b) => a - b)[2] as number);
}
