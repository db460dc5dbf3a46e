/**
 * Names of the environment variables that point at secret files, shared by the settings that read
 * them and the launchers that pass them on to the processes they start.
 */

export const MANAGEMENT_TOKEN_ENV = 'PDLINK_MANAGEMENT_TOKEN_FILE';
export const API_KEYS_ENV = 'PDLINK_API_KEYS_FILE';
