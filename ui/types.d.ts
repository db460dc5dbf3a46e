declare module 'cytoscape-elk' {
  import type cytoscape from 'cytoscape';
  const register: cytoscape.Ext;
  export default register;
}
