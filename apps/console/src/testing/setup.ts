import { cleanup, configure } from '@testing-library/react';
import { afterEach } from 'vitest';

// jsdom has no CSS object; React Aria reads meta tags with CSS.escape. Keys here are plain words.
if (typeof globalThis.CSS === 'undefined') {
  Object.defineProperty(globalThis, 'CSS', {
    value: { escape: (value: string) => value.replace(/[^\w-]/g, (char) => `\\${char}`) },
  });
}

// axe-core probes a canvas, which jsdom does not draw: answer "no canvas" instead of logging.
HTMLCanvasElement.prototype.getContext = () => null;

// findBy… and waitFor wait for a render, which takes seconds, not testing-library's default 1, while CI runs every
// package's suite side by side on two cores.
configure({ asyncUtilTimeout: 10_000 });

afterEach(() => cleanup());
