// @ts-check

/**
 * The life of a screen (or of a part of one): what it started (streams, timers) ends with it, and answers
 * that arrive after it ended are dropped (`alive`).
 */
export class Scope {
  constructor() {
    this.alive = true;
    /** @type {(() => void)[]} */
    this.ends = [];
  }

  /** @param {() => void} fn */
  onEnd(fn) {
    this.ends.push(fn);
  }

  end() {
    this.alive = false;
    for (const fn of this.ends.splice(0)) {
      try {
        fn();
      } catch {
        // a cleanup failing must not stop the others
      }
    }
  }
}
