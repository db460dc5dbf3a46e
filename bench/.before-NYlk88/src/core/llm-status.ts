/**
 * LLM-DataDist status codes (LLMStatusCode), numerically identical to native/include/pdrt.h.
 * Values are the signed int32 that crosses the C boundary; `>>> 0` gives the unsigned form.
 */
export const LLM_STATUS = {
  LLM_SUCCESS: 0,
  LLM_FAILED: 0xffffffff | 0,
  LLM_WAIT_PROC_TIMEOUT: 0x5010b001,
  LLM_KV_CACHE_NOT_EXIST: 0x5010b002,
  LLM_PARAM_INVALID: 0x5010b005,
  LLM_NOT_YET_LINK: 0x5010b007,
  LLM_ALREADY_LINK: 0x5010b008,
  LLM_LINK_FAILED: 0x5010b009,
  LLM_UNLINK_FAILED: 0x5010b00a,
  LLM_NOTIFY_PROMPT_UNLINK_FAILED: 0x5010b00b,
  LLM_CLUSTER_NUM_EXCEED_LIMIT: 0x5010b00c,
  LLM_PROCESSING_LINK: 0x5010b00d,
  LLM_EXIST_LINK: 0x5010b018,
  LLM_TIMEOUT: 0x5010b01a,
  LLM_LINK_BUSY: 0x5010b01b,
  LLM_OUT_OF_MEMORY: 0x5010b01c,
} as const;

export type StatusName = keyof typeof LLM_STATUS;
export type StatusCode = (typeof LLM_STATUS)[StatusName];

const NAME_BY_CODE = new Map<number, StatusName>(
  (Object.entries(LLM_STATUS) as [StatusName, number][]).map(([name, code]) => [code, name]),
);

/**
 * Normalises any integer to a known code: anything outside the table is LLM_FAILED.
 * @example normalizeStatus(0x5010b008) // LLM_STATUS.LLM_ALREADY_LINK
 */
export function normalizeStatus(code: number): StatusCode {
  const signed = code | 0;
  return NAME_BY_CODE.has(signed) ? (signed as StatusCode) : LLM_STATUS.LLM_FAILED;
}

/**
 * Name of a status code; unknown codes are LLM_FAILED.
 * @example statusName(0) // 'LLM_SUCCESS'
 */
export function statusName(code: number): StatusName {
  return NAME_BY_CODE.get(code | 0) ?? 'LLM_FAILED';
}

/** Error carrying an LLM status code, raised by the FFI facade's `check(rc)`. */
export class LlmStatusError extends Error {
  readonly code: StatusCode;
  constructor(code: number, context: string) {
    const normalized = normalizeStatus(code);
    super(`${context}: ${statusName(normalized)} (0x${(normalized >>> 0).toString(16)})`);
    this.name = 'LlmStatusError';
    this.code = normalized;
  }
  get codeName(): StatusName {
    return statusName(this.code);
  }
}
