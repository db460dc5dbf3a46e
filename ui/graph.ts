/**
 * The P/D graph: one compound node per group holding its instances, one edge per P-D link coloured
 * by its state. Cytoscape draws it and ELK's layered algorithm places it (prefill left, decode
 * right); the layout runs again only when instances or links come or go, not on every update.
 * ELK places nodes asynchronously (its first run takes a second or two while it warms up), and until
 * it does, new nodes sit piled at the origin, half outside the box: the container says
 * `data-layout="running"` meanwhile and the stylesheet hides it, so the page never shows a cropped
 * or empty graph, only the laid-out one.
 */
import cytoscape, { type Core, type ElementDefinition } from 'cytoscape';
import elk from 'cytoscape-elk';
import type { DashboardState } from '../src/http/dashboard-state.ts';

cytoscape.use(elk);

const STYLE: cytoscape.StylesheetJson = [
  {
    selector: 'node.instance',
    style: {
      label: 'data(label)',
      'text-wrap': 'wrap',
      'text-valign': 'center',
      'font-size': 10,
      width: 110,
      height: 44,
      shape: 'round-rectangle',
      'background-color': '#e8f1ff',
      'border-width': 2,
      'border-color': '#0f62fe',
    },
  },
  { selector: 'node.decode', style: { 'background-color': '#f3ecff', 'border-color': '#8a3ffc' } },
  { selector: 'node.gone', style: { 'background-color': '#ffd7d9', 'border-color': '#da1e28' } },
  {
    selector: 'node.group',
    style: { label: 'data(label)', 'text-valign': 'top', 'font-size': 11, 'background-color': '#f5f6f8', 'border-color': '#c1c7cd' },
  },
  {
    selector: 'edge',
    style: { width: 3, 'curve-style': 'bezier', 'target-arrow-shape': 'triangle', 'font-size': 9, 'text-rotation': 'autorotate' },
  },
  { selector: 'edge.ok', style: { 'line-color': '#24a148', 'target-arrow-color': '#24a148' } },
  { selector: 'edge.linking', style: { 'line-color': '#d2a106', 'target-arrow-color': '#d2a106', 'line-style': 'dashed' } },
  {
    selector: 'edge.failed',
    style: {
      'line-color': '#da1e28',
      'target-arrow-color': '#da1e28',
      label: 'data(code)',
      color: '#a2191f',
      'text-background-color': '#fff',
      'text-background-opacity': 0.85,
      'text-background-padding': '2px',
    },
  },
];

const LAYOUT = {
  name: 'elk',
  nodeDimensionsIncludeLabels: true,
  // Spacing is read from each compound node (a group) for its children.
  nodeLayoutOptions: (node: cytoscape.NodeSingular) =>
    node.isParent() ? { 'elk.layered.spacing.nodeNodeBetweenLayers': 180, 'elk.spacing.nodeNode': 30 } : {},
  elk: {
    algorithm: 'layered',
    'elk.direction': 'RIGHT',
    'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
    // Room between P and D for a failed link's code.
    'elk.layered.spacing.nodeNodeBetweenLayers': 180,
    'elk.spacing.nodeNode': 30,
  },
} as cytoscape.LayoutOptions;

export class TopologyGraph {
  readonly #cy: Core;
  readonly #container: HTMLElement;
  #shape = '';
  /** Layouts started; a layout that ends while a newer one runs leaves the graph hidden. */
  #layouts = 0;

  constructor(container: HTMLElement) {
    this.#container = container;
    this.#cy = cytoscape({ container, style: STYLE, userZoomingEnabled: true, wheelSensitivity: 0.3 });
  }

  /** Brings the graph to the state; lays it out again only if its shape changed. */
  update(state: DashboardState): void {
    const elements = elementsOf(state);
    const shape = elements.map((e) => `${e.data.id}<${e.data['parent'] ?? ''}`).join(',');
    const cy = this.#cy;
    cy.batch(() => {
      const wanted = new Set(elements.map((e) => e.data.id));
      cy.elements().forEach((e) => {
        if (!wanted.has(e.id())) cy.remove(e);
      });
      for (const def of elements) {
        const existing = cy.getElementById(def.data.id!);
        if (existing.empty()) cy.add(def);
        else {
          existing.data(def.data);
          existing.classes(def.classes as string);
        }
      }
    });
    if (shape !== this.#shape) {
      this.#shape = shape;
      const layout = ++this.#layouts;
      this.#container.dataset['layout'] = 'running';
      const run = cy.layout({ ...LAYOUT, fit: true, padding: 20 } as cytoscape.LayoutOptions);
      run.one('layoutstop', () => {
        if (layout !== this.#layouts) return;
        // The box may have changed size since the page was drawn.
        cy.resize();
        cy.fit(undefined, 20);
        this.#container.dataset['layout'] = 'done';
      });
      run.run();
    }
  }
}

function elementsOf(state: DashboardState): ElementDefinition[] {
  const groups = [...new Set(state.instances.map((i) => i.group))].sort((a, b) => a - b);
  const nodes: ElementDefinition[] = groups.map((g) => ({ data: { id: `g${g}`, label: `group ${g}` }, classes: 'group' }));
  for (const i of state.instances) {
    const gone = i.state === 'down' || i.state === 'unreachable' || i.circuit === 'open';
    nodes.push({
      data: { id: `i${i.id}`, parent: `g${i.group}`, label: `${i.role === 'decode' ? 'D' : 'P'} ${i.id} · ${i.state}\n${i.address}` },
      classes: `instance ${i.role}${gone ? ' gone' : ''}`,
    });
  }
  const known = new Set(state.instances.map((i) => i.id));
  const edges: ElementDefinition[] = state.links
    .filter((l) => known.has(l.p) && known.has(l.d))
    .map((l) => ({ data: { id: `l${l.p}-${l.d}`, source: `i${l.p}`, target: `i${l.d}`, code: l.code ?? '' }, classes: l.state }));
  return [...nodes, ...edges];
}
