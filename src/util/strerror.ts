/** strerror() for the errors git's messages name (Node gives its own wording, with the syscall and path). */
const MESSAGES: Record<string, string> = {
  E2BIG: 'Argument list too long',
  EACCES: 'Permission denied',
  EAGAIN: 'Resource temporarily unavailable',
  EEXIST: 'File exists',
  EISDIR: 'Is a directory',
  EMFILE: 'Too many open files',
  ENAMETOOLONG: 'File name too long',
  ENOENT: 'No such file or directory',
  ENOEXEC: 'Exec format error',
  ENOMEM: 'Cannot allocate memory',
  ENOSPC: 'No space left on device',
  ENOTDIR: 'Not a directory',
  EPERM: 'Operation not permitted',
  EROFS: 'Read-only file system',
};

export function strerror(e: unknown): string {
  const x = e as NodeJS.ErrnoException | undefined;
  return (x?.code && MESSAGES[x.code]) || (x?.message ?? String(e));
}
