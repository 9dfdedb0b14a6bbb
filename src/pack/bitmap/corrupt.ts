/**
 * A bitmap file that cannot be trusted. Thrown inside the bitmap reader
 * only: whoever loads a bitmap catches it, warns in git's words and
 * answers without bitmaps. It never reaches a client as a failure.
 */
export class BitmapCorrupt extends Error {
  /**
   * @param message git's message for it (error() or warning() text, without the prefix)
   * @param level the prefix git prints it with
   */
  constructor(message: string, readonly level: 'error' | 'warning' = 'error') {
    super(message);
    this.name = 'BitmapCorrupt';
  }

  /** The line git prints for it. */
  get line(): string { return `${this.level}: ${this.message}`; }
}
