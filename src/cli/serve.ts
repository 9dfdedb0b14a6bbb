export async function runServe(_args: string[]): Promise<void> { throw new Error('serve: not yet'); }
