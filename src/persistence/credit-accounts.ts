/** Balances as the admin service shows and sets them. Replace it together with `CreditLedger`. */
export abstract class CreditAccounts {
  /** The balance, or null for an unknown account. */
  abstract getBalance(accountId: string): Promise<number | null>;
  /** Sets the balance, creating the account if needed. */
  abstract setBalance(accountId: string, credits: number): Promise<void>;
  /** Creates the account with `credits` unless it exists (an existing balance is never changed); true when created. */
  abstract openAccount(accountId: string, credits: number): Promise<boolean>;
}
