/** Injection token of the validated `SampleConfig`. */
export const SAMPLE_CONFIG = Symbol('SAMPLE_CONFIG');
