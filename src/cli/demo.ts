export async function runDemo(_args: string[]): Promise<void> { throw new Error('demo: not yet'); }
