/** receive-pack's long refusal messages (git's wording) and constants its policies need. */

export const EMPTY_TREE_SHA1 = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
export const EMPTY_TREE_SHA256 = '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321';

/** refuse_unconfigured_deny_msg */
export const refusalDeny = "By default, updating the current branch in a non-bare repository\n" +
  "is denied, because it will make the index and work tree inconsistent\n" +
  "with what you pushed, and will require 'git reset --hard' to match\n" +
  "the work tree to HEAD.\n" +
  "\n" +
  "You can set the 'receive.denyCurrentBranch' configuration variable\n" +
  "to 'ignore' or 'warn' in the remote repository to allow pushing into\n" +
  "its current branch; however, this is not recommended unless you\n" +
  "arranged to update its work tree to match what you pushed in some\n" +
  "other way.\n" +
  "\n" +
  "To squelch this message and still keep the default behaviour, set\n" +
  "'receive.denyCurrentBranch' configuration variable to 'refuse'.";

/** refuse_unconfigured_deny_delete_current_msg */
export const refusalDeleteCurrent = "By default, deleting the current branch is denied, because the next\n" +
  "'git clone' won't result in any file checked out, causing confusion.\n" +
  "\n" +
  "You can set 'receive.denyDeleteCurrent' configuration variable to\n" +
  "'warn' or 'ignore' in the remote repository to allow deleting the\n" +
  "current branch, with or without a warning message.\n" +
  "\n" +
  "To squelch this message, you can set it to 'refuse'.";
