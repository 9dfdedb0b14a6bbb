export async function runCatFile(_args: string[]): Promise<void> { throw new Error('cat-file: not yet'); }
