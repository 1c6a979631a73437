import { describe, expect, it } from 'vitest';
import { createProgress, progressEnabled } from './progress.js';
import { CapturedOutput } from './test-terminal.js';

describe('the progress bar', () => {
  it('draws on a terminal, keeps logged lines above it, and clears itself', () => {
    const stderr = new CapturedOutput(true);
    let time = 0;
    const progress = createProgress(stderr, { label: 'Importing', total: 4, enabled: true, now: () => time });
    progress.tick();
    time += 1000;
    progress.tick();
    progress.log('convo: line 3: bad');
    time += 1000;
    progress.tick(2);
    progress.done();
    const frames = stderr.text.split('\r\x1b[2K').filter(Boolean);
    expect(frames).toEqual([
      'Importing [######------------------] 1/4',
      'Importing [############------------] 2/4',
      'convo: line 3: bad\n',
      'Importing [############------------] 2/4',
      'Importing [########################] 4/4',
    ]);
  });

  it('is silent with --json or when stderr is not a terminal, but still prints logged lines', () => {
    expect(progressEnabled({ json: true }, new CapturedOutput(true))).toBe(false);
    expect(progressEnabled({}, new CapturedOutput(false))).toBe(false);
    expect(progressEnabled({}, new CapturedOutput(true))).toBe(true);
    const stderr = new CapturedOutput(false);
    const progress = createProgress(stderr, { label: 'Importing', total: 2, enabled: false });
    progress.tick();
    progress.log('convo: line 2: bad');
    progress.tick();
    progress.done();
    expect(stderr.text).toBe('convo: line 2: bad\n');
  });
});
